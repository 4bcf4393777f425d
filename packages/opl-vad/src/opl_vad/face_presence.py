"""Weak face-presence signal from a face detector run over frames (G-OPL's only face input).

G-OPL is guided by weak face-presence signals, not identity labels. On real videos that
signal comes from an off-the-shelf detector: this module runs a cascade detector that works
offline (OpenCV's Haar cascades ship inside the ``opencv-python-headless`` wheel;
scikit-image ships an LBP frontal-face cascade) over the frames of a video and turns the
per-frame detections into one value per snippet:

- :meth:`FacePresenceExtractor.frame_presence`: ``d_j = 1[detector fires on frame j]``
- :meth:`FacePresenceExtractor.snippet_presence`: ``f_t = mean_{j in snippet t} d_j``, the
  fraction of a snippet's frames with a face, ``f_t in [0, 1]``. Snippets are consecutive
  groups of ``frames_per_snippet`` frames (16, the I3D snippet of the RTFM protocol,
  :data:`opl_vad.frame_protocol.FRAMES_PER_SNIPPET`; a last partial group is averaged over
  the frames it has), or, when the feature file was resampled to a fixed ``n_snippets``
  (e.g. 32 segments), ``n_snippets`` near-equal consecutive groups.
- :func:`read_frames`: frames from a folder of images (sorted by name), a video file
  (OpenCV), or a ``.npy`` array ``(N, H, W)`` / ``(N, H, W, 3)``.

The signal is noisy by construction (missed profiles, false fires); G-OPL is meant to work
with such a signal. ``opl-vad extract-face-presence`` is the command-line front end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .frame_protocol import FRAMES_PER_SNIPPET

__all__ = ["FacePresenceExtractor", "read_frames"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".mpg", ".mpeg")


def _gray_uint8(frame: np.ndarray) -> np.ndarray:
    a = np.asarray(frame)
    if a.ndim == 3 and a.shape[-1] in (3, 4):
        a = a[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    elif a.ndim != 2:
        raise ValueError(f"a frame must be (H, W) or (H, W, 3), got shape {tuple(a.shape)}")
    a = np.asarray(a, dtype=np.float64)
    if not np.isfinite(a).all():
        raise ValueError("frame contains NaN or inf values")
    if a.size and a.max() <= 1.0:
        a = a * 255.0
    return np.clip(a, 0, 255).astype(np.uint8)


def read_frames(source: str | Path) -> list[np.ndarray]:
    """Frames of one video: an image folder (sorted), a video file, or a ``.npy`` array.

    Examples
    --------
    >>> import numpy as np, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "v.npy"
    >>> np.save(p, np.zeros((3, 8, 8), np.uint8))
    >>> len(read_frames(p))
    3
    """
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"frame source {str(source)!r} does not exist")
    if source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(
                f"folder {str(source)!r} has no image files ({', '.join(IMAGE_SUFFIXES)})"
            )
        try:
            import cv2
        except ImportError:  # pragma: no cover - scikit-image path
            from skimage.io import imread

            return [imread(p) for p in files]
        frames = []
        for p in files:
            img = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)
            if img is None:
                raise ValueError(f"cannot read image {str(p)!r}")
            frames.append(img)
        return frames
    if source.suffix == ".npy":
        arr = np.load(source)
        if arr.ndim not in (3, 4):
            raise ValueError(
                f"{str(source)!r}: frames array must be (N, H, W) or (N, H, W, 3), got {arr.shape}"
            )
        return list(arr)
    if source.suffix.lower() in VIDEO_SUFFIXES:
        try:
            import cv2
        except ImportError as e:
            raise ImportError(
                "reading video files needs opencv-python-headless: pip install 'opl-vad[faces]'"
            ) from e
        cap = cv2.VideoCapture(str(source))
        frames = []
        while True:
            ok, img = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
        cap.release()
        if not frames:
            raise ValueError(f"no frames could be decoded from {str(source)!r}")
        return frames
    raise ValueError(
        f"{str(source)!r}: expected an image folder, a .npy array or a video ({', '.join(VIDEO_SUFFIXES)})"
    )


class FacePresenceExtractor:
    """Per-snippet face presence (fraction of frames where a cascade detector fires).

    Parameters
    ----------
    backend:
        ``"opencv"`` (``cv2.CascadeClassifier``, Haar cascade shipped with
        ``opencv-python-headless``) or ``"skimage"`` (``skimage.feature.Cascade`` with the
        bundled LBP frontal-face cascade).
    cascade:
        OpenCV cascade file name inside ``cv2.data.haarcascades`` or a path to an XML file.
    frames_per_snippet:
        Frames per snippet when ``n_snippets`` is not given (16 = the I3D snippet).
    scale_factor, min_neighbors, min_size:
        Detector settings (OpenCV's meaning; ``min_neighbors`` is scikit-image's
        ``min_neighbor_number``).
    upscale:
        Resize factor applied to every frame before detection (small frames need > 1).
    stride:
        Run the detector on every ``stride``-th frame and reuse the result for the frames in
        between (speed); 1 = every frame.

    Examples
    --------
    >>> import numpy as np
    >>> from skimage import data
    >>> ex = FacePresenceExtractor(frames_per_snippet=2)
    >>> face = data.astronaut()[::2, ::2]           # (256, 256, 3), one frontal face
    >>> frames = [face, face, np.zeros((64, 64)), np.zeros((64, 64))]
    >>> ex.snippet_presence(frames).tolist()
    [1.0, 0.0]
    """

    def __init__(
        self,
        backend: str = "opencv",
        cascade: str = "haarcascade_frontalface_default.xml",
        frames_per_snippet: int = FRAMES_PER_SNIPPET,
        scale_factor: float = 1.1,
        min_neighbors: int = 5,
        min_size: int = 20,
        upscale: float = 1.0,
        stride: int = 1,
    ):
        if backend not in ("opencv", "skimage"):
            raise ValueError(f"backend must be 'opencv' or 'skimage', got {backend!r}")
        if frames_per_snippet < 1:
            raise ValueError(f"frames_per_snippet must be >= 1, got {frames_per_snippet}")
        if stride < 1:
            raise ValueError(f"stride must be >= 1, got {stride}")
        if scale_factor <= 1.0:
            raise ValueError(f"scale_factor must be > 1, got {scale_factor}")
        if upscale <= 0:
            raise ValueError(f"upscale must be > 0, got {upscale}")
        self.backend = backend
        self.frames_per_snippet = int(frames_per_snippet)
        self.scale_factor = float(scale_factor)
        self.min_neighbors = int(min_neighbors)
        self.min_size = int(min_size)
        self.upscale = float(upscale)
        self.stride = int(stride)
        if backend == "opencv":
            try:
                import cv2
            except ImportError as e:
                raise ImportError(
                    "the opencv backend needs opencv-python-headless: pip install 'opl-vad[faces]'"
                ) from e
            path = (
                Path(cascade) if Path(cascade).is_file() else Path(cv2.data.haarcascades) / cascade
            )
            if not path.is_file():
                raise FileNotFoundError(f"cascade file {str(path)!r} does not exist")
            self._detector = cv2.CascadeClassifier(str(path))
            if self._detector.empty():
                raise ValueError(f"cannot load cascade {str(path)!r}")
        else:
            try:
                from skimage import data
                from skimage.feature import Cascade
            except ImportError as e:
                raise ImportError(
                    "the skimage backend needs scikit-image: pip install 'opl-vad[faces]'"
                ) from e
            self._detector = Cascade(data.lbp_frontal_face_cascade_filename())

    def detect(self, frame: np.ndarray) -> bool:
        """Whether the detector finds at least one face in ``frame`` (``(H, W)`` or ``(H, W, 3)``)."""
        g = _gray_uint8(frame)
        if self.upscale != 1.0:
            from scipy.ndimage import zoom

            g = zoom(g, self.upscale, order=1)
        if self.backend == "opencv":
            found = self._detector.detectMultiScale(
                g,
                scaleFactor=self.scale_factor,
                minNeighbors=self.min_neighbors,
                minSize=(self.min_size,) * 2,
            )
            return len(found) > 0
        side = min(g.shape)
        if side < self.min_size:
            return False
        found = self._detector.detect_multi_scale(
            img=g.astype(np.float64) / 255.0,
            scale_factor=max(self.scale_factor, 1.05),
            step_ratio=1,
            min_size=(self.min_size,) * 2,
            max_size=(side, side),
            min_neighbor_number=self.min_neighbors,
        )
        return len(found) > 0

    def frame_presence(self, frames) -> np.ndarray:
        """``(N,)`` array of 0/1: face found in each frame (every ``stride``-th frame is run)."""
        frames = list(frames)
        if not frames:
            raise ValueError("no frames given")
        d = np.zeros(len(frames), dtype=np.float64)
        for j in range(0, len(frames), self.stride):
            d[j : j + self.stride] = float(self.detect(frames[j]))
        return d

    def snippet_presence(self, frames, n_snippets: int | None = None) -> np.ndarray:
        """Face presence per snippet in ``[0, 1]`` (see the module docstring for the grouping)."""
        d = self.frame_presence(frames)
        if n_snippets is None:
            groups = [
                d[i : i + self.frames_per_snippet]
                for i in range(0, len(d), self.frames_per_snippet)
            ]
        else:
            if n_snippets < 1 or n_snippets > len(d):
                raise ValueError(
                    f"n_snippets must be in [1, {len(d)}] (the number of frames), got {n_snippets}"
                )
            groups = np.array_split(d, n_snippets)
        return np.array([g.mean() for g in groups])
