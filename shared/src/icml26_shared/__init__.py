"""icml26-shared: the thin layer every icml26 paper package builds on.

Modules, one concept each:

- :mod:`icml26_shared.paper`: package metadata and entry-point discovery (torch-free).
- :mod:`icml26_shared.cli`: the one command-line pattern (LightningCLI + typed extra commands).
- :mod:`icml26_shared.experiment`: experiments as data (sections + YAML presets) and the runner.
- :mod:`icml26_shared.reproduce`: the ``reproduce`` command over a package's experiment.
- :mod:`icml26_shared.readme`: README result blocks checked against committed ``results.md``.
- :mod:`icml26_shared.trainer`: the quiet Lightning Trainer and silencing of Lightning's chatter.
- :mod:`icml26_shared.results`: result tables and reports, written atomically.
- :mod:`icml26_shared.bench`: timing with warm-up and repeats, peak memory, ratios.
- :mod:`icml26_shared.hub`: offline-aware ``load_dataset`` / ``from_pretrained``.
- :mod:`icml26_shared.contract`: the LightningModule contract and the package contract
  generated over every installed package.
- :mod:`icml26_shared.progress`: progress bars on a TTY only.
- :mod:`icml26_shared.umbrella`: the ``icml26`` command.

Nothing is imported here, so that importing one module stays cheap.
"""

__version__ = "0.2.0"
