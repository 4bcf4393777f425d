"""Face presence from a cascade detector: detections, snippet grouping, CLI and bad input."""

import numpy as np
import pytest
from icml26_shared.contract import assert_one_line_error

cv2 = pytest.importorskip("cv2")
skdata = pytest.importorskip("skimage.data")

from opl_vad.cli import main  # noqa: E402
from opl_vad.face_presence import FacePresenceExtractor, read_frames  # noqa: E402


@pytest.fixture(scope="module")
def frames():
    from skimage.transform import rescale

    # one frontal face; half size (256 px) keeps the cascade fast and still finds it
    face = (rescale(skdata.astronaut(), 0.5, channel_axis=-1) * 255).astype(np.uint8)
    blank = np.zeros_like(face)
    return np.stack([face, face, face, blank, blank, blank, face])


def test_detector_fires_on_face_not_on_blank(frames):
    ex = FacePresenceExtractor()
    assert ex.detect(frames[0]) and not ex.detect(frames[3])
    assert ex.frame_presence(frames).tolist() == [1, 1, 1, 0, 0, 0, 1]


def test_snippet_grouping(frames):
    ex = FacePresenceExtractor(frames_per_snippet=2)
    # groups of 2 frames, last partial group averaged over what it has
    assert ex.snippet_presence(frames).tolist() == [1.0, 0.5, 0.0, 1.0]
    # a fixed number of near-equal groups (np.array_split): [3, 2, 2] frames
    assert ex.snippet_presence(frames, n_snippets=3).tolist() == [1.0, 0.0, 0.5]
    with pytest.raises(ValueError, match="n_snippets"):
        ex.snippet_presence(frames, n_snippets=8)


def test_stride_reuses_detections(frames):
    d = FacePresenceExtractor(stride=3).frame_presence(frames)
    assert d.tolist() == [1, 1, 1, 0, 0, 0, 1]


def test_read_frames_folder_and_npy(tmp_path, frames):
    for j, f in enumerate(frames[:3]):
        cv2.imwrite(str(tmp_path / f"{j:03d}.png"), f)
    assert len(read_frames(tmp_path)) == 3
    np.save(tmp_path / "v.npy", frames)
    assert len(read_frames(tmp_path / "v.npy")) == len(frames)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no image files"):
        read_frames(empty)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_frames(tmp_path / "nothing")


def test_cli_writes_signal(tmp_path, frames, capsys):
    np.save(tmp_path / "v.npy", frames)
    assert main(["extract-face-presence", "--frames", str(tmp_path / "v.npy"),
                 "--out", str(tmp_path / "f.npy"), "--frames_per_snippet", "2"]) == 0  # fmt: skip
    f = np.load(tmp_path / "f.npy")
    assert f.tolist() == [1.0, 0.5, 0.0, 1.0] and ((f >= 0) & (f <= 1)).all()


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--frames", "MISSING.npy"], "does not exist"),
        (["--backend", "yolo"], "backend"),
        (["--frames_per_snippet", "0"], "frames_per_snippet"),
        (["--frames", "LIST"], "missing frame source"),
        (["--frames", "BAD"], "frames array"),
    ],
)
def test_cli_bad_input(tmp_path, frames, capsys, extra, match):
    np.save(tmp_path / "v.npy", frames)
    np.save(tmp_path / "bad.npy", np.zeros(5))
    (tmp_path / "x.list").write_text("v.npy\nnot_here.npy\n")
    sub = {"MISSING.npy": str(tmp_path / "missing.npy"), "LIST": str(tmp_path / "x.list"),
           "BAD": str(tmp_path / "bad.npy")}  # fmt: skip
    args = {"--frames": str(tmp_path / "v.npy"), "--out": str(tmp_path / "f.npy")}
    for k, v in zip(extra[::2], extra[1::2], strict=True):
        args[k] = sub.get(v, v)
    code = main(["extract-face-presence", *[t for kv in args.items() for t in kv]])
    assert_one_line_error(capsys.readouterr().err, match, code)
