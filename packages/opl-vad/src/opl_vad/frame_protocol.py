"""Snippet-to-frame scores, the frame-level protocol of RTFM-style evaluation.

Each snippet covers ``frames_per_snippet`` (16) consecutive frames; a frame's anomaly score is
its snippet's score (``np.repeat``), truncated to the video's frame count. Frame-level AUC /
AP are then computed over all frames of all test videos concatenated (torchmetrics).
"""

from __future__ import annotations

import torch

__all__ = ["FRAMES_PER_SNIPPET", "snippet_to_frame"]

FRAMES_PER_SNIPPET = 16  # I3D snippets of 16 frames (RTFM protocol)


def snippet_to_frame(
    scores: torch.Tensor, n_frames: int | None = None, frames_per_snippet: int = FRAMES_PER_SNIPPET
) -> torch.Tensor:
    """``(T,)`` snippet scores -> ``(n_frames,)`` frame scores (default ``16 T``).

    Examples
    --------
    >>> import torch
    >>> snippet_to_frame(torch.tensor([0.1, 0.9]), n_frames=20, frames_per_snippet=16).shape
    torch.Size([20])
    >>> snippet_to_frame(torch.tensor([0.1, 0.9]), frames_per_snippet=2).tolist()
    [0.10000000149011612, 0.10000000149011612, 0.8999999761581421, 0.8999999761581421]
    """
    frames = scores.repeat_interleave(frames_per_snippet)
    if n_frames is None:
        return frames
    if n_frames > len(frames):  # pad with the last snippet's score
        frames = torch.cat([frames, frames[-1:].expand(n_frames - len(frames))])
    return frames[:n_frames]
