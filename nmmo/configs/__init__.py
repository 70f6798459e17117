"""Canonical task configs (TOML). Installed as ``nmmo.configs``; load them with ``nmmo.config.load``."""
