"""Where the client finds the head, exactly as the ``corral`` CLI does.

``CORRAL_ADDR``, ``CORRAL_TOKEN`` and ``CORRAL_CA`` override, field by field, the JSON file
``$CORRAL_CONFIG`` (default ``~/.config/corral/config.json``, which ``corral up`` writes):
``{"addr": "http://127.0.0.1:7070", "token": "...", "ca": "/path/ca.pem"}``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Mapping, Optional


@dataclass(frozen=True)
class Config:
    addr: str  # one URL, or several heads' URLs separated by commas
    token: str = ""
    ca: str = ""  # PEM of the CA that signed an https head's certificate; "": the system's
    source: str = ""  # where addr came from, for messages


def default_path(env: Mapping[str, str]) -> str:
    if env.get("CORRAL_CONFIG"):
        return env["CORRAL_CONFIG"]
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".config", "corral", "config.json")
    return ""


def load(env: Optional[Mapping[str, str]] = None) -> Config:
    """Reads the environment and the config file; raises ValueError saying how to set an
    address when there is none, or when the file is unreadable or malformed."""
    env = os.environ if env is None else env
    path = default_path(env)
    fields = {"addr": "", "token": "", "ca": ""}
    source = ""
    if path and os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read config file {path}: {e}") from e
        if not isinstance(doc, dict):
            raise ValueError(f'config file {path} is not a JSON object like '
                             '{"addr": "http://HOST:PORT", "token": "..."}')
        for key in fields:
            value = doc.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ValueError(f"config file {path}: field '{key}' must be a string")
            fields[key] = value
        if fields["addr"]:
            source = path
    elif env.get("CORRAL_CONFIG") and not env.get("CORRAL_ADDR"):
        raise ValueError(f"config file {path} (from CORRAL_CONFIG) does not exist")
    if env.get("CORRAL_ADDR"):
        fields["addr"], source = env["CORRAL_ADDR"], "CORRAL_ADDR"
    for key, var in (("token", "CORRAL_TOKEN"), ("ca", "CORRAL_CA")):
        if env.get(var):
            fields[key] = env[var]
    if not fields["addr"] and env.get("CORRAL_STEP_HEAD") and env.get("CORRAL_STEP_TOKEN"):
        # Inside a job with no config of the user's: the job's own head and credential, which
        # may act on that job only (as the CLI does).
        fields["addr"], source = env["CORRAL_STEP_HEAD"], "CORRAL_STEP_HEAD"
        fields["token"] = env["CORRAL_STEP_TOKEN"]
        fields["ca"] = env.get("CORRAL_STEP_CA", "")
    if not fields["addr"]:
        raise ValueError("no head address configured: set CORRAL_ADDR (e.g. export "
                         "CORRAL_ADDR=http://127.0.0.1:7070) and CORRAL_TOKEN, or write "
                         f"{path or '$HOME/.config/corral/config.json'} as "
                         '{"addr": "http://HOST:PORT", "token": "..."} (corral up writes it)')
    return Config(addr=fields["addr"].rstrip("/"), token=fields["token"], ca=fields["ca"],
                  source=source)
