"""The contract every paper package's LightningModule must honour.

:func:`check_contract` is called by each package's tests on its smallest
configuration. It checks, on CPU:

1. the model and datamodule build and are Lightning objects;
2. a forward pass runs on a real batch and (unless ``backward=False``, for
   non-parametric methods) a backward pass gives finite gradients;
3. two builds under the same seed give identical outputs;
4. ``Trainer.fit`` runs with ``fast_dev_run``;
5. a checkpoint save / ``load_from_checkpoint`` round trip gives identical outputs.

A failure raises ``AssertionError`` naming the step.

:func:`assert_one_line_error` is the matching check for a package's command line: bad input
must give one line on standard error naming the problem, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch


def assert_one_line_error(stderr: str, match: str, code: int | None = None) -> None:
    """Assert that ``stderr`` is one line containing ``match`` (and the exit ``code`` was 2).

    Use with pytest's ``capsys``: ``assert_one_line_error(capsys.readouterr().err, "rank",
    main([...]))``.

    >>> assert_one_line_error("pkg: error: rate must be > 0", "rate", 2)
    """
    err = stderr.strip()
    if code is not None:
        assert code == 2, f"exit code {code}, expected 2; stderr: {err}"
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert match in err, err


def _default_forward(model: pl.LightningModule, batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return model(batch)
    if isinstance(batch, Sequence) and batch and isinstance(batch[0], torch.Tensor):
        return model(batch[0])
    if isinstance(batch, Mapping):
        return model(**batch)
    return model(batch)


def _tensors(obj: Any, detach: bool = True) -> list[torch.Tensor]:
    """Flatten nested outputs (tensors, arrays, numbers, dicts, sequences) into tensors."""
    if isinstance(obj, torch.Tensor):
        return [obj.detach() if detach else obj]
    if isinstance(obj, np.ndarray):
        return [torch.from_numpy(obj)]
    if isinstance(obj, (int, float, np.number, bool)):
        return [torch.tensor(float(obj))]
    if isinstance(obj, Mapping):
        return [t for k in sorted(obj, key=str) for t in _tensors(obj[k], detach)]
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        return [t for item in obj for t in _tensors(item, detach)]
    raise TypeError(f"cannot compare model output of type {type(obj).__name__}")


def assert_same_outputs(a: Any, b: Any, what: str, atol: float = 0.0) -> None:
    """Assert two (nested) outputs are equal, with absolute tolerance ``atol``."""
    ta, tb = _tensors(a), _tensors(b)
    assert len(ta) == len(tb), f"contract: {what}: {len(ta)} vs {len(tb)} output tensors"
    for i, (x, y) in enumerate(zip(ta, tb, strict=True)):
        assert x.shape == y.shape, (
            f"contract: {what}: output {i} shape {tuple(x.shape)} vs {tuple(y.shape)}"
        )
        if x.is_floating_point() or x.is_complex():
            ok = torch.allclose(x.cpu(), y.cpu(), rtol=0.0, atol=atol, equal_nan=True)
        else:
            ok = torch.equal(x.cpu(), y.cpu())
        assert ok, (
            f"contract: {what}: output {i} differs (max abs diff {(x.cpu().double() - y.cpu().double()).abs().max().item():.3g})"
        )


@dataclass
class ContractResult:
    """What :func:`check_contract` ran, for tests that want to look further."""

    model: pl.LightningModule
    batch: Any
    output: Any
    checkpoint: Path


def check_contract(
    model_fn: Callable[[], pl.LightningModule],
    datamodule_fn: Callable[[], pl.LightningDataModule],
    tmp_path: str | Path,
    forward_fn: Callable[[pl.LightningModule, Any], Any] | None = None,
    backward: bool = True,
    seed: int = 0,
    atol: float = 0.0,
) -> ContractResult:
    """Run the workspace contract on a model factory and a datamodule factory.

    Parameters
    ----------
    model_fn, datamodule_fn:
        Zero-argument factories building the smallest configuration.
    tmp_path:
        Scratch folder (pytest's ``tmp_path``).
    forward_fn:
        ``forward_fn(model, batch) -> outputs`` (tensors or nested containers of
        them). Default: ``model(batch)``, ``model(batch[0])`` for tuples,
        ``model(**batch)`` for dicts.
    backward:
        Check that a backward pass of ``sum(outputs)`` gives finite gradients.
        Pass ``False`` for non-parametric methods.
    seed:
        Seed used for both builds of the determinism check.
    atol:
        Absolute tolerance for the equality checks (0: bit-identical).
    """
    tmp_path = Path(tmp_path)
    forward = forward_fn or _default_forward

    # 1. build
    pl.seed_everything(seed, verbose=False)
    model = model_fn()
    assert isinstance(model, pl.LightningModule), (
        f"contract: build: model_fn returned {type(model).__name__}, not a lightning.pytorch.LightningModule"
    )
    datamodule = datamodule_fn()
    assert isinstance(datamodule, pl.LightningDataModule), (
        f"contract: build: datamodule_fn returned {type(datamodule).__name__}, not a LightningDataModule"
    )
    datamodule.prepare_data()
    datamodule.setup("fit")
    batch = next(iter(datamodule.train_dataloader()))

    # 2. forward and backward
    model.eval()
    with torch.no_grad():
        output = forward(model, batch)
    if backward:
        model.train()
        grad_out = _tensors(forward(model, batch), detach=False)
        loss = sum(t.float().sum() for t in grad_out if t.requires_grad)
        assert isinstance(loss, torch.Tensor), "contract: backward: no output requires grad"
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert grads, (
            "contract: backward: the model has no trainable parameters (pass backward=False)"
        )
        assert any(g is not None for g in grads), (
            "contract: backward: no parameter received a gradient"
        )
        assert all(torch.isfinite(g).all() for g in grads if g is not None), (
            "contract: backward: non-finite gradients"
        )
        model.zero_grad(set_to_none=True)

    # 3. same seed, same outputs
    outs = []
    for _ in range(2):
        pl.seed_everything(seed, verbose=False)
        m = model_fn().eval()
        with torch.no_grad():
            outs.append(forward(m, batch))
    assert_same_outputs(outs[0], outs[1], "two builds with the same seed", atol)

    # 4. fit with fast_dev_run
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        fast_dev_run=True,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(model, datamodule=datamodule)

    # 5. checkpoint round trip
    ckpt = tmp_path / "contract.ckpt"
    trainer.save_checkpoint(ckpt)
    model.eval()
    with torch.no_grad():
        before = forward(model, batch)
    loaded = type(model).load_from_checkpoint(ckpt, map_location="cpu", weights_only=False).eval()
    with torch.no_grad():
        after = forward(loaded, batch)
    assert_same_outputs(before, after, "checkpoint save/load round trip", atol)
    return ContractResult(model=model, batch=batch, output=output, checkpoint=ckpt)
