"""Operating system distributions and virtualization names."""

import re

_DISTRIBUTIONS = [
    (r"debian", "debian"),
    (r"ubuntu", "ubuntu"),
    (r"opensuse", "opensuse"),
    (r"\bsu[sS]e\b|sles", "suse"),
    (r"red ?hat|rhel", "rhel"),
    (r"centos", "centos"),
    (r"rocky", "rocky"),
    (r"alma", "almalinux"),
    (r"fedora", "fedora"),
    (r"arch", "arch"),
    (r"alpine", "alpine"),
    (r"gentoo", "gentoo"),
    (r"amazon", "amazon"),
    (r"oracle", "oracle"),
    (r"freebsd", "freebsd"),
    (r"windows", "windows"),
    (r"mac ?os|os x|darwin", "macos"),
]

_VIRTUALIZATION = {
    "": "",
    "none": "none",
    "bare metal": "none",
    "bare-metal": "none",
    "physical": "none",
    "qemu": "kvm",
    "kvm": "kvm",
    "microsoft": "hyperv",
    "hyper-v": "hyperv",
    "hyperv": "hyperv",
    "oracle": "virtualbox",
    "virtualbox": "virtualbox",
    "vmware": "vmware",
    "xen": "xen",
    "amazon": "kvm",
    "docker": "container",
    "podman": "container",
    "lxc": "container",
    "container": "container",
    "wsl": "wsl",
}


def normalize_distribution(raw: str | None) -> str:
    text = (raw or "").strip()
    if not text:
        return ""
    for pattern, name in _DISTRIBUTIONS:
        if re.search(pattern, text, re.I):
            return name
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def normalize_virtualization(raw: str | None) -> str:
    text = (raw or "").strip().lower()
    return _VIRTUALIZATION.get(text, text)
