"""Doctest collection: the Lightning module needs the optional 'lightning' extra."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("lightning") is None:
    collect_ignore.append("anytime_hoeffding/lightning.py")
