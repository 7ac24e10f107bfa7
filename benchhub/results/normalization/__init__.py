"""Turn the raw strings agents send into canonical values.

Each function is pure: raw text in, canonical value out, so that the whole
database can be re-normalized when a rule improves (the raw text is kept).
"""

from benchhub.results.normalization.cpu import CpuName, normalize_cpu
from benchhub.results.normalization.os import normalize_distribution, normalize_virtualization
from benchhub.results.normalization.storage import (
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_mount_options,
)
from benchhub.results.normalization.versions import (
    ServerVersion,
    UnknownEngineError,
    parse_server_version,
)

__all__ = [
    "CpuName",
    "ServerVersion",
    "UnknownEngineError",
    "normalize_cpu",
    "normalize_distribution",
    "normalize_filesystem",
    "normalize_io_scheduler",
    "normalize_mount_options",
    "normalize_virtualization",
    "parse_server_version",
]
