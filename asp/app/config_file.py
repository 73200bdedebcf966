"""A run's settings as one file: ``asp train --config FILE`` reads it, ``--print-config``
writes it.

The file is TOML, or JSON where its name ends in ``.json`` (a run's own ``config.json``).
It holds the fields of the run's config, :class:`~asp.app.run_config.GameRunConfig`, with
the trainer in a ``[train]`` table, the engine in ``[eval_engine]``, the network in
``[network]`` (the fields of the game's network config).
A key left out keeps the game's default; an option on the command line overrides the file.

>>> data = {"game": "connect4", "iterations": 2, "eval_engine": None, "train": {"lr": 0.001, "device": "auto"}}
>>> text = config_text(data)
>>> print(text, end="")
game = "connect4"
iterations = 2
<BLANKLINE>
[train]
lr = 0.001
device = "auto"
>>> config_from_text(text, "run.toml") == {k: v for k, v in data.items() if v is not None}
True
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from asp.errors import ConfigError

__all__ = ["MAX_BYTES", "OPEN_TABLES", "config_from_text", "config_text", "merged", "read_config_file"]

MAX_BYTES = 1 << 20
"""The largest config file read: a config is a few hundred bytes."""


def config_text(data: dict[str, Any]) -> str:
    """``data`` (a config's ``to_dict()``) as TOML: its values, then each table. A value of
    None is left out (TOML has none): the field then reads as its default. The text is ASCII:
    a string's other characters are written as escapes, which TOML reads back as they were;
    a list or tuple is an array (read back as a list), a mapping inside a table an inline table.

    >>> print(config_text({"game": "mod:Game", "network": {"layers": (32, 32), "label": "\U0001f600 caf\xe9"}}), end="")
    game = "mod:Game"
    <BLANKLINE>
    [network]
    layers = [32, 32]
    label = "\\U0001F600 caf\\u00E9"

    :raises ConfigError: a value that TOML cannot hold (None inside an array or an inline
        table, a string with a lone surrogate, another type), naming its key.
    """
    lines = [f"{_toml_key(key)} = {_toml_value(key, value)}" for key, value in data.items()
             if not isinstance(value, dict | None)]  # fmt: skip
    for name, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{_toml_key(name)}]"]
            lines += [f"{_toml_key(key)} = {_toml_value(f'{name}.{key}', value)}" for key, value in table.items()
                      if value is not None]  # fmt: skip
    return "\n".join(lines) + "\n"


def _toml_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("-inf" if value < 0 else "inf")
    if isinstance(value, str):
        return _toml_string(key, value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(f"{key}[{k}]", item) for k, item in enumerate(value)) + "]"
    if isinstance(value, dict):
        items = (f"{_toml_key(str(name))} = {_toml_value(f'{key}.{name}', item)}" for name, item in value.items())
        return "{" + ", ".join(items) + "}"
    raise ConfigError(f"--print-config: {key}: no TOML value for {value!r} (a {type(value).__name__})")


def _toml_key(key: str) -> str:
    """``key`` bare where TOML allows it (letters, digits, ``_`` and ``-``), else quoted."""
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else _toml_string(key, key)


def _toml_string(key: str, value: str) -> str:
    """``value`` as a TOML basic string in ASCII: ``"``, ``\\`` and every character outside
    printable ASCII escaped (``\\uXXXX``, ``\\UXXXXXXXX``)."""
    out = []
    for char in value:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise ConfigError(
                f"--print-config: {key}: {value!r} holds a lone surrogate (U+{code:04X}), which no TOML file can hold"
            )
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        else:
            out.append(f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
    return '"' + "".join(out) + '"'


def config_from_text(text: str, name: str) -> dict[str, Any]:
    """The settings of a config file's ``text`` (JSON where ``name`` ends in ``.json``, else
    TOML).

    :raises ConfigError: text that is not a TOML (or JSON) table, named by ``name``.
    """
    if name.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"--config {name}: not JSON ({e})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"--config {name}: not a JSON object of settings")
        return data
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {name}: not TOML ({e})") from None


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The settings in the file ``path``: :func:`config_from_text` of at most
    :data:`MAX_BYTES`.

    :raises ConfigError: a file that cannot be read, is too large, or is not a config.
    """
    name = os.fspath(path)
    try:
        with Path(path).open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"--config {name}: cannot be read: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"--config {name}: over {MAX_BYTES} bytes; a config is a few hundred")
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark before the text is skipped
    except UnicodeDecodeError:
        raise ConfigError(f"--config {name}: not a text file (not UTF-8)") from None
    return config_from_text(text, name)


OPEN_TABLES = ("network",)
"""Tables whose keys are not the config's own but a game's (the fields of its network's
config, checked against the game's network where the run is made), merged unchecked."""


def merged(defaults: dict[str, Any], given: dict[str, Any], where: str) -> dict[str, Any]:
    """``defaults`` (a config's ``to_dict()``) with ``given``'s settings over them, table by
    table (the keys of :data:`OPEN_TABLES` are not checked here).

    >>> merged({"games": 8, "train": {"lr": 0.1, "epochs": 1}}, {"train": {"lr": 0.2}}, "f.toml")
    {'games': 8, 'train': {'lr': 0.2, 'epochs': 1}}
    >>> merged({"games": 8}, {"gmaes": 9}, "f.toml")
    Traceback (most recent call last):
    ...
    asp.errors.ConfigError: --config f.toml: unknown key 'gmaes'; the keys: games

    :raises ConfigError: a key that ``defaults`` does not have, named with its table.
    """
    out = dict(defaults)
    for key, value in given.items():
        if key not in defaults:
            raise ConfigError(f"--config {where}: unknown key {key!r}; the keys: {', '.join(defaults)}")
        if isinstance(defaults[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(f"--config {where}: {key} must be a table ([{key}]), got {value!r}")
            out[key] = (
                {**defaults[key], **value} if key in OPEN_TABLES else merged(defaults[key], value, f"{where} [{key}]")
            )
        else:
            out[key] = value
    return out
