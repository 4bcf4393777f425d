"""Command line of mmicl: ``mmicl --help``.

``fit/validate/test/predict`` (LightningCLI over the three stages and the two data modules of
:mod:`mmicl.lightning`; configs use ``class_path``/``init_args``, see ``configs/``),
``reproduce`` (:mod:`mmicl.reproduce`), and the package commands ``sweep`` (stage-1 ICL vs IWL over
``K`` and position encodings), ``circuits`` (progress measures of checkpoints and their
Spearman correlation with IC accuracy), ``knockout`` (head knockout of a checkpoint) and
``benchmark`` (anchors and generator throughput, no model), ``vlm-heads`` and
``digits-features`` (the example ``.npz`` feature bank for ``modality2: features``).

Nothing heavy is imported until a command runs: ``build_cli()`` names every target as a
string, and each command imports torch / lightning inside its function.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def _load_stage1(checkpoint: Path):
    """A stage-1 module and the data settings saved with it (one read, through
    :func:`icml26_shared.cli.load_checkpoint`)."""
    from mmicl.lightning import Stage1Module

    module = load_checkpoint(Stage1Module, checkpoint, what="stage-1 checkpoint")
    return module, dict(getattr(module, "datamodule_hparams", None) or {})


def _data_for(module, data_hp: dict, overrides: dict, eval_sequences: int):
    from mmicl.lightning import UnimodalICLDataModule

    hp = {
        k: v for k, v in data_hp.items() if k in UnimodalICLDataModule.__init__.__code__.co_varnames
    }
    hp.update({k: v for k, v in overrides.items() if v is not None})
    hp["eval_sequences"] = eval_sequences
    dm = UnimodalICLDataModule(**hp)
    dec = module.model
    if dec.d_in != dm.bank.D or dec.n_labels != dm.bank.L:
        raise UsageError(
            f"the checkpoint's decoder has d_in={dec.d_in}, n_labels={dec.n_labels}; "
            f"the data has D={dm.bank.D}, L={dm.bank.L}"
        )
    if dm.sampler.seq_len > dec.max_positions:
        raise UsageError(
            f"sequence length {dm.sampler.seq_len} exceeds the decoder's position capacity "
            f"{dec.max_positions}"
        )
    return dm


def sweep(
    Ks: list[int] = [256, 8192],  # noqa: B006 - jsonargparse reads the default
    positions: list[str] = ["ape", "rope", "alibi"],  # noqa: B006
    steps: int = 1000,
    batch_size: int = 64,
    L: int = 32,
    D: int = 32,
    N: int = 8,
    B: int = 2,
    eps: float = 0.1,
    n_heads: int = 1,
    n_layers: int = 2,
    max_positions: int = 65,
    eval_sequences: int = 500,
    seed: int = 0,
    embedding: str = "linear",
    d_model: int | None = None,
) -> None:
    """Stage-1 ICL vs IWL over class counts K and position encodings (one seed).

    Args:
        Ks: Class counts to train at (each a multiple of L).
        positions: Position encodings (ape, rope, alibi, hybrid, none).
        steps: AdamW steps per model.
        batch_size: Sequences per step.
        L: Label count.
        D: Item dimension.
        N: Context length.
        B: Burst size.
        eps: Within-class noise.
        n_heads: Heads per layer.
        n_layers: Decoder depth.
        max_positions: Position capacity; for ape/hybrid, a capacity equal to the sequence
            length 2N+1 turns off the random per-sequence position offset.
        eval_sequences: Sequences per evaluation split.
        seed: Seed of the banks, the stream and the initialisation.
        embedding: Input layout: linear (a learned input map to d_model) or concat (the
            authors' layout: raw tokens, ape as fixed one-hot channels concatenated).
        d_model: Decoder width (default 64 for linear, the layout's width for concat).
    """
    import lightning.pytorch as pl
    from icml26_shared.trainer import quiet_trainer

    from mmicl.evaluation import split_accuracies
    from mmicl.lightning import Stage1Module, UnimodalICLDataModule

    if steps < 1:
        raise UsageError(f"steps must be >= 1, got {steps}")
    print(f"{'pos':6s} {'K':>6s}  test    IC     IC2    IW")
    for K in Ks:
        dm = UnimodalICLDataModule(
            K=K, L=L, D=D, N=N, B=B, eps=eps, batch_size=batch_size, train_batches=steps,
            eval_sequences=eval_sequences, seed=seed, bank_seed=seed,
        )  # fmt: skip
        for pos in positions:
            pl.seed_everything(seed, verbose=False)
            module = Stage1Module(
                D, L, d_model, n_layers=n_layers, n_heads=n_heads, pos=pos,
                max_positions=max_positions, embedding=embedding,
            )  # fmt: skip
            quiet_trainer(max_steps=steps, limit_val_batches=0).fit(module, datamodule=dm)
            acc = split_accuracies(module, dm.sets("test"))
            print(
                f"{pos:6s} {K:6d}  "
                + "  ".join(f"{acc[k]:.3f}" for k in ("test", "IC", "IC2", "IW"))
            )


def circuits(
    ckpts: list[Path],
    K: int | None = None,
    L: int | None = None,
    D: int | None = None,
    N: int | None = None,
    B: int | None = None,
    eps: float | None = None,
    bank_seed: int | None = None,
    eval_sequences: int = 500,
) -> None:
    """Accuracy and induction-circuit measures of stage-1 checkpoints, with Spearman rho.

    The data settings default to those saved in each checkpoint (by ``mmicl fit``), else
    to the UnimodalICLDataModule defaults.

    Args:
        ckpts: Stage-1 checkpoints (e.g. several steps of one run).
        K: Class count of the bank.
        L: Label count.
        D: Item dimension.
        N: Context length.
        B: Burst size.
        eps: Within-class noise.
        bank_seed: Seed of the bank.
        eval_sequences: Sequences per evaluation split.
    """
    from mmicl.evaluation import circuit_measures, split_accuracies

    if not ckpts:
        raise UsageError("give at least one checkpoint with --ckpts")
    over = {"K": K, "L": L, "D": D, "N": N, "B": B, "eps": eps, "bank_seed": bank_seed}
    rows = []
    print("checkpoint  test  IC  IC2  IW | ih tila tla prev cla")
    for ck in ckpts:
        module, data_hp = _load_stage1(ck)
        sets = _data_for(module, data_hp, over, eval_sequences).sets("test")
        acc = split_accuracies(module, sets)
        meas = circuit_measures(module, sets["IC"])
        rows.append({**acc, **meas})
        print(
            f"{Path(ck).name}  "
            + " ".join(f"{acc[k]:.3f}" for k in ("test", "IC", "IC2", "IW"))
            + " | "
            + " ".join(f"{meas[k]:.3f}" for k in ("ih", "tila", "tla", "prev", "cla"))
        )
    if len(rows) >= 3:
        from scipy.stats import spearmanr

        for key in ("ih", "tila", "prev"):
            x, y = [r[key] for r in rows], [r["IC"] for r in rows]
            rho = spearmanr(x, y).statistic if len(set(x)) > 1 and len(set(y)) > 1 else float("nan")
            print(f"spearman rho({key}, IC acc) = {rho:.3f}")


def knockout(
    checkpoint: Path,
    K: int | None = None,
    L: int | None = None,
    D: int | None = None,
    N: int | None = None,
    B: int | None = None,
    eps: float | None = None,
    bank_seed: int | None = None,
    eval_sequences: int = 500,
    seed: int = 0,
) -> None:
    """Knock out the top-k induction heads, k random heads (across layers) and the top-k
    previous-token heads (k = 1, 2, 4 below the head count), heads ranked on the
    validation IC set and scored on the test sets.

    Args:
        checkpoint: Stage-1 checkpoint.
        K: Class count of the bank (default: from the checkpoint).
        L: Label count.
        D: Item dimension.
        N: Context length.
        B: Burst size.
        eps: Within-class noise.
        bank_seed: Seed of the bank.
        eval_sequences: Sequences per evaluation split.
        seed: Seed of the random-head choice.
    """
    from mmicl.evaluation import knockout_table

    module, data_hp = _load_stage1(checkpoint)
    over = {"K": K, "L": L, "D": D, "N": N, "B": B, "eps": eps, "bank_seed": bank_seed}
    dm = _data_for(module, data_hp, over, eval_sequences)
    n_heads = module.model.n_layers * module.model.n_heads
    ks = tuple(k for k in (1, 2, 4) if k < n_heads) or (1,)
    rows = knockout_table(module.model, dm.sets("test"), seed, dm.sets("val")["IC"], ks)
    for row in rows:
        print(
            f"{row['knockout']:30s} k={row['k']:<2d} {row['heads']:28s} IC {row['IC acc']:.3f}"
            f"  IC2 {row['IC2 acc']:.3f}  IW0 {row['IW0 acc']:.3f}"
        )


def benchmark(
    K: int = 8192,
    L: int = 32,
    D: int = 32,
    N: int = 8,
    B: int = 2,
    eps: float = 0.1,
    sequences: int = 1000,
    batch_size: int = 128,
    seed: int = 0,
) -> None:
    """Anchor accuracies (random context label, nearest context item) and generator speed.

    Args:
        K: Class count.
        L: Label count.
        D: Item dimension.
        N: Context length.
        B: Burst size.
        eps: Within-class noise.
        sequences: Sequences per split.
        batch_size: Batch size of the throughput measurement.
        seed: Seed of the bank and the sets.
    """
    import time

    import torch

    from mmicl.anchors import context_anchors
    from mmicl.gmm_data import BurstySampler, GMMBank, eval_splits

    bank = GMMBank(K, L, D, seed=seed)
    sampler = BurstySampler(bank, N, B, eps=eps)
    sets = eval_splits(sampler, sequences, seed)
    for name, accs in context_anchors(sets, N).items():
        print(f"{name:40s} " + "  ".join(f"{k} {v:.3f}" for k, v in accs.items()))
    g = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    reps = 20
    for _ in range(reps):
        sampler.sample(batch_size, g)
    rate = reps * batch_size / (time.perf_counter() - start)
    print(f"generator: {rate:,.0f} sequences/s (batch {batch_size}, K={K}, N={N})")


def vlm_heads(
    model: str = "Qwen/Qwen2.5-VL-3B-Instruct",
    tiny: bool = False,
    prompts: int = 64,
    N: int = 8,
    B: int = 2,
    top_k: int = 1,
    seed: int = 0,
) -> None:
    """Rank a pretrained model's heads by induction strength and knock out the top ones.

    Args:
        model: Hugging Face model id or local directory (Qwen2.5-VL or a causal LM).
        tiny: Use a randomly initialised tiny Qwen2.5-VL instead (offline dry run).
        prompts: Number of token-level ICL prompts.
        N: Context pairs per prompt.
        B: Burst size.
        top_k: Heads knocked out per row.
        seed: Seed of the prompts and the random heads.
    """
    from mmicl import vlm_heads as vh

    try:
        if tiny:
            net = vh.tiny_qwen2_5_vl(seed)
        else:
            from icml26_shared.hub import HubUnavailableError

            try:
                net = vh.load_vlm(model)
            except HubUnavailableError as exc:
                raise ValueError(" ".join(str(exc).split())) from None
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    items, labels = vh.default_token_pools(net)
    batch = vh.induction_prompts(prompts, N, B, items, labels, seed)
    ranks = sorted(vh.rank_heads(net, batch), key=lambda r: -r["ih"])
    for r in ranks[:5]:
        print(f"L{r['layer']}H{r['head']:<3d} IH {r['ih']:.4f}  prev {r['prev']:.4f}")
    for row in vh.vlm_knockout_table(net, batch, labels, top_k, seed):
        print(f"{row['knockout']:32s} {row['heads']:24s} ICL acc {row['ICL acc']:.3f}")


def digits_features(out: Path, dim: int = 16, seed: int = 0) -> None:
    """Write the example feature bank: scikit-learn's 1797 8x8 digits embedded by a
    ``dim``-component PCA, as ``.npz`` with ``features`` (1797, dim) and ``labels`` (1797,)
    (the format ``modality2: features`` reads; replace it with your encoder's embeddings).

    Args:
        out: The ``.npz`` file to write (atomically).
        dim: PCA components (1 to 64).
        seed: Seed of the PCA solver.
    """
    from mmicl import feature_bank as fb

    x, y = fb.digits_features(dim, seed)
    path = fb.save_feature_bank(out, x, y)
    print(f"wrote {path}: features {x.shape}, labels {y.shape} ({len(set(y.tolist()))} classes)")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="mmicl.lightning:ICLStage",
        datamodule_class="mmicl.lightning:ICLDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "sweep": "mmicl.cli:sweep",
            "circuits": "mmicl.cli:circuits",
            "knockout": "mmicl.cli:knockout",
            "benchmark": "mmicl.cli:benchmark",
            "vlm-heads": "mmicl.cli:vlm_heads",
            "digits-features": "mmicl.cli:digits_features",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``mmicl`` console script."""
    return build_cli().main(args)
