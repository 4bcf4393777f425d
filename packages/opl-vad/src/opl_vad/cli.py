"""Command line of opl-vad: ``opl-vad --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~opl_vad.lightning.VADModule` with
:class:`~opl_vad.lightning.SyntheticVADDataModule`,
:class:`~opl_vad.lightning.FaceFrameVADDataModule` or
:class:`~opl_vad.lightning.FeatureListDataModule`), ``reproduce``, and the package commands
``synth`` (planted features written in the RTFM list format), ``audit`` (the privacy
audit of a feature file), ``extract-face-presence`` (the weak face signal from a cascade
face detector over a video's frames), ``predict --checkpoint`` (scores, kept features and the
audit of a feature list from a trained checkpoint, :mod:`opl_vad.deployment`) and
``export-projector`` (the learned projection as a standalone tensor file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def synth(out: Path, n_train: int = 200, n_test: int = 100, dim: int = 128,
          n_snippets: int = 32, face_flip: float = 0.1, seed: int = 0) -> None:  # fmt: skip
    """Write planted snippet features in the RTFM list format (``.npy`` per video + lists).

    Args:
        out: Output folder: ``train/``, ``test/``, ``train.list``, ``test.list``,
            ``test_gt.npy`` (frame labels), ``*_face.npy`` (face signal / truth, ``(V, T)``),
            ``faces/<video>_face.npy`` (the training face signal per video, the layout of
            ``FeatureListDataModule(face_dir=...)``), ``test_faces/<video>_face.npy`` (the
            test videos' true face presence, for ``predict --face_dir``),
            ``test_identity.npy``, ``face_basis.npy``.
        n_train: Training videos.
        n_test: Test videos.
        dim: Feature size.
        n_snippets: Snippets per video.
        face_flip: Flip probability of the training face signal.
        seed: Seed of the bases and the videos.
    """
    import numpy as np

    from .frame_protocol import FRAMES_PER_SNIPPET
    from .synthetic import make_planted_vad

    out = Path(out)
    kw = dict(n_snippets=n_snippets, dim=dim, face_flip=face_flip, basis_seed=seed)
    sets = {"train": make_planted_vad(n_train, seed=seed, **kw),
            "test": make_planted_vad(n_test, seed=seed + 1, **kw)}  # fmt: skip
    for split, d in sets.items():
        (out / split).mkdir(parents=True, exist_ok=True)
        names = []
        for v in range(len(d)):
            kind = "Abnormal" if d.video_labels[v] else "Normal"
            name = f"{split}/{kind}_{v:04d}.npy"
            np.save(out / name, d.features[v])
            names.append(name)
            folder, face = ("faces", d.face_signal) if split == "train" else ("test_faces", d.face)
            (out / folder).mkdir(exist_ok=True)
            np.save(out / folder / f"{kind}_{v:04d}_face.npy", face[v])
        (out / f"{split}.list").write_text("\n".join(names) + "\n")
        face = d.face_signal if split == "train" else d.face
        np.save(out / f"{split}_face.npy", face)
    test = sets["test"]
    np.save(out / "test_gt.npy", test.snippet_labels.repeat(FRAMES_PER_SNIPPET, axis=1).reshape(-1))
    np.save(out / "test_identity.npy", test.identity)
    np.save(out / "face_basis.npy", test.face_basis)
    print(f"wrote {n_train} + {n_test} videos to {out}")


def audit(features: Path, face: Path, identity: Path | None = None,
          face_basis: Path | None = None, removed_basis: Path | None = None,
          groups: Path | None = None, out: Path | None = None,
          folds: int = 5, seed: int = 0) -> None:  # fmt: skip
    """Privacy audit of snippet features: face / identity linear probes, MI, subspace angle.

    Args:
        features: ``.npy`` of ``(N, D)`` snippet features, or ``(V, T, D)``: then the probes'
            folds are grouped by video (no video in both the fitting and the scoring folds).
        face: ``.npy`` of face presence per snippet (0/1), ``N`` values.
        identity: Optional ``.npy`` of identities per snippet (or per video, repeated).
        face_basis: Optional ``.npy`` ``(D, k)`` planted face basis.
        removed_basis: Optional ``.npy`` ``(D, r)`` removed basis, for the angle.
        groups: Optional ``.npy`` of the video of each snippet (``N`` values, e.g. the
            ``snippet_video.npy`` of ``predict``): the probes' folds are grouped by it.
        out: Optional folder: the audit is also written to ``out/audit.json``.
        folds: Cross-validation folds of the probes.
        seed: Seed of the subsample and folds.
    """
    import numpy as np

    from .privacy_audit import PrivacyAudit

    def load(p):
        if not Path(p).is_file():
            raise UsageError(f"file {str(p)!r} does not exist")
        return np.load(p)

    X = load(features)
    video = np.repeat(np.arange(X.shape[0]), X.shape[1]) if X.ndim == 3 else None
    X = X.reshape(-1, X.shape[-1])
    if groups is not None:
        video = load(groups).reshape(-1)
        if len(video) != len(X):
            raise UsageError(f"groups has {len(video)} values but features have {len(X)} snippets")
    f = load(face).reshape(-1)
    if len(f) != len(X):
        raise UsageError(f"face has {len(f)} values but features have {len(X)} snippets")
    if not np.isin(f, (0, 1)).all():
        raise UsageError("face values must be 0 or 1")
    ids = None
    if identity is not None:
        ids = load(identity).reshape(-1)
        if len(ids) != len(X):
            if len(X) % len(ids):
                raise UsageError(f"identity has {len(ids)} values for {len(X)} snippets")
            ids = np.repeat(ids, len(X) // len(ids))
    fb = None if face_basis is None else load(face_basis)
    rb = None if removed_basis is None else load(removed_basis)
    result = PrivacyAudit(folds=folds, seed=seed).run(X, f, ids, fb, rb, groups=video)
    for k, v in result.items():
        print(f"{k}: {v:.4f}")
    if out is not None:
        import json

        from icml26_shared.results import atomic_write_text, ensure_writable_dir

        path = ensure_writable_dir(out) / "audit.json"
        atomic_write_text(path, json.dumps({k: float(v) for k, v in result.items()}, indent=2))
        print(f"wrote {path}")


def extract_face_presence(frames: Path, out: Path, n_snippets: int | None = None,
                          backend: str = "opencv", frames_per_snippet: int = 16,
                          min_neighbors: int = 5, min_size: int = 20, upscale: float = 1.0,
                          stride: int = 1) -> None:  # fmt: skip
    """Face presence per snippet from a cascade face detector run over a video's frames.

    Args:
        frames: An image folder (frames sorted by name), a video file, or a ``.npy`` array
            ``(N, H, W[, 3])``; or a ``.list`` text file with one such source per line (then
            ``out`` is a folder and each source gets ``<name>_face.npy``).
        out: Output ``.npy`` of ``(T,)`` values in [0, 1] (the fraction of frames with a face).
        n_snippets: Split the frames into this many near-equal snippets (match a feature file
            resampled to a fixed length, e.g. 32); default: groups of ``frames_per_snippet``.
        backend: ``opencv`` (Haar cascade in opencv-python-headless) or ``skimage`` (LBP).
        frames_per_snippet: Frames per snippet (16 = the I3D snippet of the RTFM protocol).
        min_neighbors: Detector's minimum neighbours (higher = fewer false fires).
        min_size: Smallest face side in pixels (after ``upscale``).
        upscale: Resize factor applied to frames before detection.
        stride: Run the detector on every ``stride``-th frame only.
    """
    import numpy as np

    from .face_presence import FacePresenceExtractor, read_frames

    frames = Path(frames)
    if not frames.exists():
        raise UsageError(f"frame source {str(frames)!r} does not exist")
    try:
        ex = FacePresenceExtractor(backend=backend, frames_per_snippet=frames_per_snippet,
                                   min_neighbors=min_neighbors, min_size=min_size,
                                   upscale=upscale, stride=stride)  # fmt: skip
        if frames.suffix == ".list":
            base = frames.parent
            sources = [ln.strip() for ln in frames.read_text().splitlines() if ln.strip()]
            if not sources:
                raise UsageError(f"list file {str(frames)!r} is empty")
            for s in sources:
                p = Path(s) if Path(s).is_absolute() else base / s
                if not p.exists():
                    raise UsageError(
                        f"list file {str(frames)!r} names a missing frame source {str(p)!r}"
                    )
            Path(out).mkdir(parents=True, exist_ok=True)
            for s in sources:
                p = Path(s) if Path(s).is_absolute() else base / s
                f = ex.snippet_presence(read_frames(p), n_snippets)
                np.save(Path(out) / f"{p.stem}_face.npy", f)
                print(f"{p.name}: {len(f)} snippets, mean face presence {f.mean():.3f}")
            return
        f = ex.snippet_presence(read_frames(frames), n_snippets)
    except (ValueError, FileNotFoundError, ImportError) as e:
        raise UsageError(str(e)) from e
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    np.save(out, f)
    print(f"wrote {len(f)} snippets to {out} (mean face presence {f.mean():.3f})")


def _load_model(checkpoint: Path):
    from icml26_shared.cli import load_checkpoint

    from .lightning import VADModule

    return load_checkpoint(VADModule, checkpoint)


def predict(checkpoint: Path, list: Path, out: Path, face_dir: Path | None = None,
            gt: Path | None = None, folds: int = 5, seed: int = 0) -> None:  # fmt: skip
    """Score a feature list with a trained checkpoint: snippet / frame scores, kept features, audit.

    Args:
        checkpoint: ``.ckpt`` written by ``opl-vad fit`` (a ``VADModule``).
        list: Feature list in the RTFM / UR-DMU layout (one ``.npy`` per video, ``(T, D)`` or
            ten-crop ``(T, 10, D)``; relative paths resolve against the list's folder).
        out: Output folder: ``snippet_scores.csv``, ``frame_scores.npy`` (16 frames per
            snippet, list order), ``kept_features.npy`` ``(N, D)``, ``snippet_video.npy``,
            ``face.npy`` (with ``face_dir``) and ``result.json`` (metrics, audits).
        face_dir: Folder of ``<video>_face.npy`` face signals (what ``extract-face-presence``
            writes): the privacy audit of the raw and the kept features.
        gt: Frame-level ground truth ``.npy`` over the listed videos: frame AUC / AP.
        folds: Cross-validation folds of the audit's probes.
        seed: Seed of the audit.
    """
    from .deployment import predict_videos, write_prediction

    for p, what in ((list, "list file"), (gt, "ground truth")):
        if p is not None and not Path(p).is_file():
            raise UsageError(f"{what} {str(p)!r} does not exist")
    if face_dir is not None and not Path(face_dir).is_dir():
        raise UsageError(f"face folder {str(face_dir)!r} does not exist")
    module = _load_model(checkpoint)
    try:
        pred = predict_videos(module, list, face_dir, gt, folds=folds, seed=seed)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from e
    info = {"checkpoint": Path(checkpoint).name, "list": Path(list).name,
            "head": module.hparams.head, "projection": module.hparams.projection}  # fmt: skip
    path = write_prediction(pred, out, info)
    summary = ", ".join(f"{k} {v:.3f}" for k, v in pred.metrics.items())
    if pred.audit:
        summary += (f"{', ' if summary else ''}face probe {pred.audit['face_probe_acc']:.3f} "
                    f"(raw {pred.audit_raw['face_probe_acc']:.3f}, chance "
                    f"{pred.audit['face_chance']:.3f})")  # fmt: skip
    print(f"scored {len(pred.names)} videos -> {path}" + (f" ({summary})" if summary else ""))


def export_projector(checkpoint: Path, out: Path) -> None:
    """Write a checkpoint's learned projection as a standalone tensor file (``.pt``).

    Args:
        checkpoint: ``.ckpt`` written by ``opl-vad fit`` with projection ``opl`` or ``gopl``.
        out: Output file, e.g. ``projector.pt``: a ``torch.save`` dict with ``basis``
            ``(D, k)`` (orthonormal; G-OPL: task block then the last ``rank_face`` face
            columns), ``projector`` ``(D, D) = I - Q Q^T``, ``rank_face``, ``dim``. Load it
            in front of any head with ``opl_vad.projection.FixedProjection.from_file(out)``.
    """
    from .deployment import export_projection

    module = _load_model(checkpoint)
    try:
        path = export_projection(module, out)
    except ValueError as e:
        raise UsageError(str(e)) from e
    print(f"wrote {path} (D = {module.hparams.dim}, removed rank {module.projection.rank})")


class OplVadCLI(PaperCLI):
    """:class:`PaperCLI` whose ``predict`` also takes ``--checkpoint`` (the deployment path).

    ``opl-vad predict --checkpoint C --list L --out DIR`` runs :func:`predict`; ``predict``
    with ``--config`` / ``--ckpt_path`` stays LightningCLI's.
    """

    def command_help(self) -> dict[str, str]:
        helps = super().command_help()
        helps["predict"] = ("Score a feature list: --checkpoint C --list L --out DIR "
                            "(or Lightning's predict with --config).")  # fmt: skip
        return helps

    def main(self, args: Sequence[str] | None = None) -> int:
        import sys

        argv = list(sys.argv[1:] if args is None else args)
        if argv[:1] != ["predict"] or not any(
            a == "--checkpoint" or a.startswith("--checkpoint=") for a in argv[1:]
        ):
            return super().main(argv)
        try:
            self._run_function("predict", predict, argv[1:])
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except KeyboardInterrupt:
            print(f"{self.prog}: interrupted", file=sys.stderr)
            return 130
        except (UsageError, ValueError, OSError) as exc:
            return self.error(str(exc) or type(exc).__name__)
        return 0


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs; configs name the data
    module by ``class_path``)."""
    return OplVadCLI(
        PAPER,
        model_class="opl_vad.lightning:VADModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_data=True,
        commands={
            "synth": "opl_vad.cli:synth",
            "audit": "opl_vad.cli:audit",
            "extract-face-presence": "opl_vad.cli:extract_face_presence",
            "export-projector": "opl_vad.cli:export_projector",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``opl-vad`` console script."""
    return build_cli().main(args)
