"""Command line of opl-vad: ``opl-vad --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~opl_vad.lightning.VADModule` with
:class:`~opl_vad.lightning.SyntheticVADDataModule`,
:class:`~opl_vad.lightning.FaceFrameVADDataModule` or
:class:`~opl_vad.lightning.FeatureListDataModule`), ``reproduce``, and the package commands
``synth`` (planted features written in the RTFM list format) and ``audit`` (the privacy
audit of a feature file) and ``extract-face-presence`` (the weak face signal from a cascade
face detector over a video's frames).
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
            ``FeatureListDataModule(face_dir=...)``), ``test_identity.npy``,
            ``face_basis.npy``.
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
            if split == "train":
                (out / "faces").mkdir(exist_ok=True)
                np.save(out / "faces" / f"{kind}_{v:04d}_face.npy", d.face_signal[v])
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
          folds: int = 5, seed: int = 0) -> None:  # fmt: skip
    """Privacy audit of snippet features: face / identity linear probes, MI, subspace angle.

    Args:
        features: ``.npy`` of ``(N, D)`` snippet features, or ``(V, T, D)``: then the probes'
            folds are grouped by video (no video in both the fitting and the scoring folds).
        face: ``.npy`` of face presence per snippet (0/1), ``N`` values.
        identity: Optional ``.npy`` of identities per snippet (or per video, repeated).
        face_basis: Optional ``.npy`` ``(D, k)`` planted face basis.
        removed_basis: Optional ``.npy`` ``(D, r)`` removed basis, for the angle.
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
    groups = np.repeat(np.arange(X.shape[0]), X.shape[1]) if X.ndim == 3 else None
    X = X.reshape(-1, X.shape[-1])
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
    result = PrivacyAudit(folds=folds, seed=seed).run(X, f, ids, fb, rb, groups=groups)
    for k, v in result.items():
        print(f"{k}: {v:.4f}")


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


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs; configs name the data
    module by ``class_path``)."""
    return PaperCLI(
        PAPER,
        model_class="opl_vad.lightning:VADModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_data=True,
        commands={
            "synth": "opl_vad.cli:synth",
            "audit": "opl_vad.cli:audit",
            "extract-face-presence": "opl_vad.cli:extract_face_presence",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``opl-vad`` console script."""
    return build_cli().main(args)
