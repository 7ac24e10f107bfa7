"""CPU model names: 'AMD Athlon(tm) 64 X2 Dual Core Processor 5200+' and
'AMD Athlon 64 X2 5200+' are one CPU."""

import re
from typing import NamedTuple


class CpuName(NamedTuple):
    vendor: str  # intel, amd, arm, apple, ibm, … or "" when unknown
    model: str  # vendor-less canonical model, e.g. "Athlon 64 X2 5200+"


_VENDORS = [
    (re.compile(r"\b(genuine)?intel\b", re.I), "intel"),
    (re.compile(r"\b(authentic)?amd\b", re.I), "amd"),
    (re.compile(r"\bapple\b", re.I), "apple"),
    (re.compile(r"\b(ibm|power\d+)\b", re.I), "ibm"),
    (re.compile(r"\b(arm|cortex|neoverse)\b", re.I), "arm"),
    (re.compile(r"\b(qemu|kvm)\b", re.I), "virtual"),
    (re.compile(r"\bvia\b", re.I), "via"),
    (re.compile(r"\bhygon\b", re.I), "hygon"),
]

_NOISE = [
    r"\((r|tm|c)\)",  # (R) (TM) (tm)
    r"[®™]",
    r"@\s*[\d.]+\s*[gm]hz",  # nominal clock after '@' repeats the model name
    r"\b\d+-core\s+processor\b",
    r"\b(dual|quad|six|eight|triple|twelve|sixteen)[- ]core\b",
    r"\bprocessor\b",
    r"\bcpu\b",
    r"\b(genuine|authentic)(intel|amd)\b",
    r"\bwith radeon\b.*$",
    r"\bradeon graphics\b",
]
_NOISE_RE = re.compile("|".join(_NOISE), re.I)
_VENDOR_WORD = re.compile(r"\b(intel|amd|apple|ibm|via|hygon)\b\s*", re.I)


def normalize_cpu(raw: str) -> CpuName:
    text = (raw or "").strip()
    if not text:
        return CpuName("", "")
    vendor = next((name for pattern, name in _VENDORS if pattern.search(text)), "")
    model = _NOISE_RE.sub(" ", text)
    # Core(TM)2 → "Core 2"; the trademark sign glued the digit on.
    model = re.sub(r"\bCore\s*(\d)\b", r"Core \1", model)
    model = re.sub(r"\s+", " ", model).strip(" ,-")
    model = _VENDOR_WORD.sub("", model).strip()
    return CpuName(vendor, model)
