"""A real entropy-coded bitstream for integer weight codes (ANS via ``constriction``).

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956) reports entropies; this module
turns them into bytes so the rate can be checked, side information included.

Format (little endian)::

    b"WSIC" | u8 version | u8 mode | u32 a | u32 n | u32 n_dead | i32 zmin | i32 zmax
    | dead indices (u16, or u32 when n > 65536)
    | f32 row normaliser | fp16 row scales (a) | [pooled: f32 column normaliser | fp16 column
    scales] | entropy model | u32 n_words | ANS payload (u32 words)

Entropy models:

* ``pooled`` (mode 0): one categorical table over [zmin, zmax], sent as u32 counts -- the
  model behind the pooled entropy;
* ``per_column`` (mode 1, also the ``coded`` accounting's): a zero flag per live column
  (packed bits); then, for the columns with a non-zero code only, their fp16 scales (in place of
  the column scales above, which this mode leaves out), a 1-bit family flag (quantized Gaussian
  or quantized Laplace, whichever codes the column shorter), a u8 log-scale index and an i8
  mean index (:func:`watersic.entropy.model_indices`) -- 18 bits of model per column instead of
  a full histogram; all-zero columns are not coded at all.

Symbols are coded column by column with ``constriction.stream.stack.AnsCoder`` (exact,
invertible); decoding reproduces the codes bit for bit.
"""

from __future__ import annotations

import struct

import constriction
import numpy as np
import torch

from watersic.entropy import column_models, model_indices, model_mean, model_scale

MAGIC = b"WSIC"
VERSION = 2
MODES = {"pooled": 0, "per_column": 1}
#: The bitstream mode that realises each rate accounting.
ACCOUNTING_MODE = {"pooled": "pooled", "per_column": "per_column", "coded": "per_column"}


def fp16_normalised(v: np.ndarray) -> tuple[float, np.ndarray]:
    """Split ``v`` into an fp32 normaliser and fp16 values with ``v ~ norm * half``."""
    v = np.asarray(v, dtype=np.float64)
    norm = float(np.float32(np.abs(v).max())) if v.size else 1.0
    if norm == 0.0 or not np.isfinite(norm):
        norm = 1.0
    half = (v / norm).astype(np.float16)
    return norm, half


def fp16_round(v: np.ndarray) -> np.ndarray:
    """Round ``v`` to exactly what the bitstream stores (fp32 normaliser x fp16 values)."""
    norm, half = fp16_normalised(v)
    return half.astype(np.float64) * np.float64(np.float32(norm))


def _column_models(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-column family flag (0 Gaussian, 1 Laplace), u8 scale index and i8 mean index."""
    family, mean, scale, _ = column_models(torch.from_numpy(np.asarray(Z, dtype=np.int64)))
    scale_idx, mean_idx = model_indices(mean, scale)
    return family.numpy(), scale_idx.numpy().astype(np.uint8), mean_idx.numpy().astype(np.int8)


def _model_values(scale_idx: np.ndarray, mean_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    si = torch.from_numpy(scale_idx.astype(np.int64))
    mi = torch.from_numpy(mean_idx.astype(np.int64))
    return model_mean(si, mi).numpy(), model_scale(si).numpy()


def encode(
    codes: np.ndarray,
    row_scale: np.ndarray,
    col_scale: np.ndarray,
    dead: np.ndarray,
    shape: tuple[int, int],
    mode: str = "pooled",
) -> bytes:
    """Entropy-code a quantized matrix; see the module docstring for the format."""
    if mode not in MODES:
        raise ValueError(f"unknown bitstream mode {mode!r}; choose one of {tuple(MODES)}")
    a, n = shape
    Z = np.asarray(codes, dtype=np.int64)
    dead = np.asarray(dead, dtype=np.int64)
    zmin = int(Z.min()) if Z.size else 0
    zmax = int(Z.max()) if Z.size else 0
    out = [MAGIC, struct.pack("<BBIIIii", VERSION, MODES[mode], a, n, dead.size, zmin, zmax)]
    out.append(dead.astype("<u2" if n <= 65536 else "<u4").tobytes())
    nonzero = np.any(Z != 0, axis=0) if Z.size else np.zeros(Z.shape[1], dtype=bool)
    scales = [row_scale, col_scale] if mode == "pooled" else [row_scale]
    for v in scales:
        norm, half = fp16_normalised(v)
        out.append(struct.pack("<f", norm))
        out.append(half.astype("<f2").tobytes())
    coder = constriction.stream.stack.AnsCoder()
    symbols = np.ascontiguousarray(Z.T).reshape(-1)  # column by column
    if Z.size:
        if mode == "pooled":
            counts = np.bincount(symbols - zmin, minlength=zmax - zmin + 1).astype("<u4")
            out.append(counts.tobytes())
            model = constriction.stream.model.Categorical(
                counts.astype(np.float64) / counts.sum(), perfect=False
            )
            coder.encode_reverse((symbols - zmin).astype(np.int32), model)
        else:
            out.append(np.packbits(nonzero.astype(np.uint8)).tobytes())
            norm, half = fp16_normalised(np.asarray(col_scale, dtype=np.float64)[nonzero])
            out.append(struct.pack("<f", norm))
            out.append(half.astype("<f2").tobytes())
            Zc = Z[:, nonzero]
            family, scale_idx, mean_idx = _column_models(Zc)
            out.append(np.packbits(family).tobytes())
            out.append(scale_idx.tobytes())
            out.append(mean_idx.tobytes())
            mean, scale = _model_values(scale_idx, mean_idx)
            _encode_per_column(coder, Zc, family, mean, scale, zmin, zmax)
    payload = coder.get_compressed().astype("<u4")
    out.append(struct.pack("<I", payload.size))
    out.append(payload.tobytes())
    return b"".join(out)


def _family_models(zmin: int, zmax: int):
    m = constriction.stream.model
    return m.QuantizedGaussian(zmin, zmax), m.QuantizedLaplace(zmin, zmax)


def _encode_per_column(coder, Z, family, mean, scale, zmin, zmax) -> None:
    a, n = Z.shape
    gauss, laplace = _family_models(zmin, zmax)
    # ANS is a stack: encode the columns in reverse so that decoding runs forwards.
    for j in range(n - 1, -1, -1):
        mu = np.full(a, float(mean[j]), dtype=np.float64)
        sc = np.full(a, float(scale[j]), dtype=np.float64)
        fam = laplace if family[j] else gauss
        coder.encode_reverse(Z[:, j].astype(np.int32), fam, mu, sc)


def decode(data: bytes) -> dict:
    """Invert :func:`encode`; returns codes ``(a, n_live)``, scales, dead indices and shape."""
    if len(data) < 26 or data[:4] != MAGIC:
        raise ValueError("not a WaterSIC bitstream (bad magic bytes)")
    version, mode, a, n, n_dead, zmin, zmax = struct.unpack_from("<BBIIIii", data, 4)
    if version != VERSION:
        raise ValueError(
            f"unsupported WaterSIC bitstream version {version} (this reader: "
            f"{VERSION}; quantize the model again with this watersic)"
        )
    pos = 4 + struct.calcsize("<BBIIIii")
    idt = np.dtype("<u2" if n <= 65536 else "<u4")
    dead = np.frombuffer(data, dtype=idt, count=n_dead, offset=pos).astype(np.int64)
    pos += idt.itemsize * n_dead
    n_live = n - n_dead

    def read_scales(count: int) -> np.ndarray:
        nonlocal pos
        (norm,) = struct.unpack_from("<f", data, pos)
        pos += 4
        half = np.frombuffer(data, dtype="<f2", count=count, offset=pos)
        pos += 2 * count
        return half.astype(np.float64) * np.float64(np.float32(norm))

    def read_bits(count: int) -> np.ndarray:
        nonlocal pos
        nb = (count + 7) // 8
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8, count=nb, offset=pos))
        pos += nb
        return bits[:count].astype(bool)

    scales = [read_scales(a)]
    K = zmax - zmin + 1
    total = a * n_live
    nonzero = np.ones(n_live, dtype=bool)
    if mode == 0:
        scales.append(read_scales(n_live))
    else:
        col = np.zeros(n_live, dtype=np.float64)
        if total:
            nonzero = read_bits(n_live)
            col[nonzero] = read_scales(int(nonzero.sum()))
        scales.append(col)
    if total:
        if mode == 0:
            counts = np.frombuffer(data, dtype="<u4", count=K, offset=pos)
            pos += 4 * K
        else:
            m = int(nonzero.sum())
            family = read_bits(m)
            scale_idx = np.frombuffer(data, dtype=np.uint8, count=m, offset=pos)
            pos += m
            mean_idx = np.frombuffer(data, dtype=np.int8, count=m, offset=pos)
            pos += m
            mean, scale = _model_values(scale_idx, mean_idx)
    (n_words,) = struct.unpack_from("<I", data, pos)
    pos += 4
    payload = np.frombuffer(data, dtype="<u4", count=n_words, offset=pos).astype(np.uint32)
    coder = constriction.stream.stack.AnsCoder(payload.copy())
    Z = np.zeros((a, n_live), dtype=np.int64)
    if total:
        if mode == 0:
            model = constriction.stream.model.Categorical(
                counts.astype(np.float64) / counts.sum(), perfect=False
            )
            sym = coder.decode(model, total).astype(np.int64) + zmin
            Z = sym.reshape(n_live, a).T.copy()
        else:
            gauss, laplace = _family_models(zmin, zmax)
            for k, j in enumerate(np.flatnonzero(nonzero)):
                mu = np.full(a, float(mean[k]), dtype=np.float64)
                sc = np.full(a, float(scale[k]), dtype=np.float64)
                Z[:, j] = coder.decode(laplace if family[k] else gauss, mu, sc)
    mode_name = {v: k for k, v in MODES.items()}[mode]
    return {
        "codes": Z,
        "row_scale": scales[0],
        "col_scale": scales[1],
        "dead": dead,
        "shape": (a, n),
        "mode": mode_name,
    }
