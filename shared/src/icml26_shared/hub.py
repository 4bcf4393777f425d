"""Loading datasets and pretrained models from the Hugging Face Hub, offline-aware.

The real loading path is kept for users with internet. When the Hub cannot be
reached (no network, or ``HF_HUB_OFFLINE=1``) and the item is not in the local
cache, these wrappers fail within a few seconds with :class:`HubUnavailableError`
naming the dataset or model id and the offline alternative, instead of a stack
trace after a long timeout. ``datasets`` and ``transformers`` are imported
lazily: packages that use these wrappers declare them as their own dependencies.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"


class HubUnavailableError(ConnectionError, RuntimeError):
    """A dataset or model is neither cached locally nor reachable on the Hub.

    A :class:`ConnectionError` (so an ``OSError``: package commands run through
    :class:`icml26_shared.cli.PaperCLI` report it as one line with exit 2) and, for
    callers written against 0.1.0, still a :class:`RuntimeError`.
    """


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@functools.cache
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the Hub endpoint succeeds within ``timeout`` seconds.

    Honours ``HF_HUB_OFFLINE`` and ``HF_ENDPOINT``. The answer is cached per process.
    """
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("HF_DATASETS_OFFLINE")):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT))
    host = url.hostname or ""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _is_local(path_or_id: str) -> bool:
    return Path(path_or_id).expanduser().exists()


def _unavailable(
    kind: str, ident: str, offline_hint: str, cause: BaseException | None
) -> HubUnavailableError:
    reason = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    hint = f" Offline alternative: {offline_hint}" if offline_hint else ""
    return HubUnavailableError(
        f"{kind} {ident!r} is not in the local Hugging Face cache and the Hub cannot be "
        f"reached{reason}.{hint}"
    )


@contextlib.contextmanager
def _datasets_offline() -> Iterator[None]:
    """Put an already-imported ``datasets`` into offline mode for one call."""
    import datasets.config as cfg

    saved = {
        k: getattr(cfg, k) for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if hasattr(cfg, k)
    }
    try:
        for key in saved:
            setattr(cfg, key, True)
        yield
    finally:
        for key, value in saved.items():
            setattr(cfg, key, value)


@contextlib.contextmanager
def _hub_offline() -> Iterator[None]:
    """Put ``huggingface_hub`` (when installed) into offline mode for one call.

    With ``HF_HUB_OFFLINE`` set this way, an uncached id fails at once instead of after
    minutes of retried requests and their log lines.
    """
    try:
        import huggingface_hub.constants as hf_constants
    except ImportError:
        yield
        return
    saved = hf_constants.HF_HUB_OFFLINE
    hf_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        hf_constants.HF_HUB_OFFLINE = saved


def load_dataset(path: str, *args: Any, offline_hint: str = "", **kwargs: Any) -> Any:
    """``datasets.load_dataset`` with a fast, clear failure when offline.

    Parameters
    ----------
    path:
        A Hub dataset id or a local path / builder name.
    offline_hint:
        What the user can do instead (e.g. ``"--data synthetic"``), put into the error.
    """
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            f"loading dataset {path!r} needs the 'datasets' package: pip install datasets"
        ) from exc
    if _is_local(path) or hub_reachable():
        return datasets.load_dataset(path, *args, **kwargs)
    try:
        with _datasets_offline(), _hub_offline():
            return datasets.load_dataset(path, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure here means "not cached"
        raise _unavailable("dataset", path, offline_hint, exc) from exc


def from_pretrained(
    cls: Any, model_id: str, *args: Any, offline_hint: str = "", **kwargs: Any
) -> Any:
    """``cls.from_pretrained(model_id, ...)`` with a fast, clear failure when offline.

    Works with any class following the ``from_pretrained`` / ``local_files_only``
    convention (transformers, diffusers, peft). Offline, only the local cache is tried,
    with ``huggingface_hub`` in offline mode so that nothing retries a request.
    """
    if _is_local(model_id) or hub_reachable():
        return cls.from_pretrained(model_id, *args, **kwargs)
    try:
        with _hub_offline():
            return cls.from_pretrained(model_id, *args, local_files_only=True, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure here means "not cached"
        raise _unavailable("model", model_id, offline_hint, exc) from exc
