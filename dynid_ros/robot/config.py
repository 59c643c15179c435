"""Robot configuration files (``config/<robot>.yaml``): one mapping with a section per tool.

Sections: ``identification`` (options of ``dynid identify``, same names as the CLI flags, plus
``bounds`` and ``processing``), ``excitation`` (``dynid excite``), ``simulation`` and ``nodes``.
Command-line flags override the file.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from dynid_ros.errors import ConfigError


def load_config(path: str | Path | None) -> dict:
    """The whole configuration mapping of ``path`` ({} when None)."""
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        content = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {str(err).splitlines()[0]}") from err
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of sections")
    return content


def config_section(path: str | Path | None, name: str) -> dict:
    """One section of a configuration file ({} when absent)."""
    section = load_config(path).get(name) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: section '{name}' must be a mapping")
    return section
