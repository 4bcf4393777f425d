"""Workspace-wide pytest set-up: Hypothesis profiles (``HYPOTHESIS_PROFILE=ci|dev``)."""

import os

from hypothesis import settings

# ci: few, reproducible examples; no deadline (the first torch call is slow).
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
