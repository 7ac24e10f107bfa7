"""The web form for uploading a tool's output with what it does not say.

Field names are ``<section>_<field>`` of the submission document's
environment, so that an error the document check reports at
``$.environment.hardware.cores`` lands next to ``hardware_cores``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from benchhub_contract.importers import TOOLS
from benchhub_contract.schema import DocumentError, submission_schema
from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from benchhub.imports.services import ToolOutputError
from benchhub.results.labels import ENUM_LABELS

GIB = 1024**3
KEPT_FILE_HELP = "Your file's text is kept in the box below; choose a file only to replace it."

TOOL_LABELS = {
    "pgbench": "pgbench report",
    "pgbench-log": "pgbench aggregate log",
    "sysbench": "sysbench 1.0 / 1.1",
    "benchbase": "BenchBase summary.json",
    "hammerdb": "HammerDB result lines",
}

VIRTUALIZATION_CHOICES = [
    ("", "—"),
    ("none", "none (bare metal)"),
    ("kvm", "KVM / QEMU"),
    ("vmware", "VMware"),
    ("xen", "Xen"),
    ("hyperv", "Hyper-V"),
    ("virtualbox", "VirtualBox"),
    ("container", "container (Docker, LXC, …)"),
    ("wsl", "WSL"),
]

SUGGESTIONS = {
    "filesystems": ["ext4", "xfs", "btrfs", "zfs", "ext3", "ext2", "jfs", "ufs", "ntfs", "apfs"],
    "io-schedulers": ["none", "mq-deadline", "bfq", "kyber", "deadline", "cfq", "noop"],
    "sysbench-tests": [
        "oltp_read_write",
        "oltp_read_only",
        "oltp_write_only",
        "oltp_point_select",
        "oltp_update_index",
        "oltp_update_non_index",
        "oltp_insert",
        "oltp_delete",
        "select_random_points",
        "select_random_ranges",
    ],
}


def enum_choices(section: str, field: str) -> list[tuple[str, str]]:
    values = submission_schema()["$defs"][section]["properties"][field]["enum"]
    return [("", "—"), *((v, ENUM_LABELS.get(v, v)) for v in values)]


def _text(label: str, *, help_text: str = "", datalist: str = "", **attrs: str) -> forms.CharField:
    if datalist:
        attrs["list"] = datalist
    return forms.CharField(
        label=label,
        required=False,
        max_length=500,
        help_text=help_text,
        widget=forms.TextInput(attrs=attrs),
    )


class ToolUploadForm(forms.Form):
    tool = forms.ChoiceField(
        label="Tool",
        choices=[
            ("", "— choose —"),
            *((name, TOOL_LABELS.get(name, what)) for name, (what, _) in TOOLS.items()),
        ],
    )
    file = forms.FileField(
        label="Output file",
        required=False,
        help_text="The tool's output as it printed it. A file replaces the pasted text below.",
    )
    output = forms.CharField(
        label="…or paste the output",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
    )
    test = _text(
        "sysbench test",
        help_text=(
            "sysbench does not print which test ran, unless its command line is in the file "
            "or in Command line below (its --tables, --table-size and --time are kept too)."
        ),
        datalist="sysbench-tests",
    )
    clients = forms.IntegerField(
        label="Clients (-c)",
        required=False,
        min_value=1,
        help_text="A pgbench aggregate log does not say how many clients ran.",
    )
    command = forms.CharField(
        label="Command line",
        required=False,
        max_length=4000,
        help_text="How the run was started, so that others can repeat it.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. pgbench -c 8 -j 2 -T 60 bench"}),
    )

    database_engine = forms.ChoiceField(
        label="Engine", required=False, choices=enum_choices("database", "engine")
    )
    database_version_string = _text(
        "Version",
        help_text="16.2 with the engine, or the whole text of SELECT version().",
        placeholder="e.g. PostgreSQL 16.2 on x86_64-pc-linux-gnu…",
    )
    database_config_profile = _text(
        "Configuration profile", placeholder="e.g. default, my-huge.cnf, …"
    )

    hardware_cpu = _text("CPU", placeholder="e.g. AMD Ryzen 7 5800X 8-Core Processor")
    hardware_cores = forms.IntegerField(label="Cores", required=False, min_value=1)
    hardware_threads = forms.IntegerField(label="Threads", required=False, min_value=1)
    hardware_ram_gib = forms.DecimalField(
        label="RAM (GiB)", required=False, min_value=Decimal("0.01"), max_digits=9, decimal_places=2
    )
    hardware_virtualization = forms.ChoiceField(
        label="Virtualization", required=False, choices=VIRTUALIZATION_CHOICES
    )

    os_family = forms.ChoiceField(
        label="Family", required=False, choices=enum_choices("os", "family")
    )
    os_distribution = _text("Distribution", placeholder="e.g. Debian")
    os_version = _text("Version", placeholder="e.g. 12")
    os_kernel = _text("Kernel", placeholder="e.g. 6.1.0-18-amd64")

    storage_kind = forms.ChoiceField(
        label="Device kind", required=False, choices=enum_choices("storage", "kind")
    )
    storage_device_model = _text("Device model", placeholder="e.g. Samsung SSD 980 PRO 1TB")
    storage_filesystem = _text("Filesystem", datalist="filesystems", placeholder="e.g. ext4")
    storage_mount_options = _text(
        "Mount options",
        help_text="Comma-separated, as in /proc/mounts.",
        placeholder="e.g. noatime,discard",
    )
    storage_io_scheduler = _text("I/O scheduler", datalist="io-schedulers")

    client_protocol = forms.ChoiceField(
        label="Protocol",
        required=False,
        choices=enum_choices("client", "protocol"),
        help_text="How the tool connected to the server.",
    )

    FIELDSETS = {
        "database": (
            "Database server",
            "Of the outputs, only pgbench's report (PostgreSQL 14 and later) names the server.",
        ),
        "hardware": ("Machine", ""),
        "os": ("Operating system", ""),
        "storage": ("Storage", ""),
        "client": ("Client", ""),
    }

    def fieldsets(self) -> list[tuple[str, str, list[forms.BoundField]]]:
        """(legend, hint, fields) per environment section, in the order of FIELDSETS."""
        return [
            (legend, hint, [self[name] for name in self.fields if name.startswith(f"{section}_")])
            for section, (legend, hint) in self.FIELDSETS.items()
        ]

    def output_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("tool", "file", "output", "test", "clients", "command")]

    def suggestions(self) -> dict[str, list[str]]:
        return SUGGESTIONS

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        upload = cleaned.get("file")
        limit = settings.BENCHHUB_MAX_UPLOAD_BYTES
        if upload is not None:
            if upload.size > limit:
                self.add_error("file", f"The file is larger than {filesizeformat(limit)}.")
                return cleaned
            content = upload.read()
            try:
                text: str | bytes = content.decode("utf-8")
            except UnicodeDecodeError:
                text = content  # the importer says what is wrong with it
            else:
                # A browser cannot fill a file input again: when the form comes
                # back (an error, a preview), the file's text is in the text box.
                self.data = self.data.copy()
                self.data["output"] = text
                self["file"].help_text = KEPT_FILE_HELP
            cleaned["text"] = text
        elif cleaned.get("output", "").strip():
            if len(cleaned["output"].encode()) > limit:
                self.add_error("output", f"The text is larger than {filesizeformat(limit)}.")
            cleaned["text"] = cleaned["output"]
        else:
            self.add_error("file", "Upload the tool's output file, or paste its text below.")
        return cleaned

    def service_arguments(self) -> dict[str, Any]:
        """What services.tool_output_read and tool_output_import take."""
        data = self.cleaned_data
        return {
            "tool": data["tool"],
            "text": data["text"],
            "environment": self.environment(),
            "parameters": {
                name: data[name] for name in ("test", "clients") if data[name] not in (None, "")
            },
            "command": data["command"],
        }

    def environment(self) -> dict[str, dict[str, Any]]:
        sections: dict[str, dict[str, Any]] = {}
        for name, value in self.cleaned_data.items():
            section, _, key = name.partition("_")
            if section not in self.FIELDSETS or value in (None, ""):
                continue
            if key == "ram_gib":
                key, value = "ram_bytes", int(value * GIB)
            sections.setdefault(section, {})[key] = value  # text fields come stripped
        return sections

    def add_service_error(self, error: ToolOutputError) -> None:
        self._add_at_path(error.path, error.message)

    def add_document_errors(self, errors: list[DocumentError]) -> None:
        for error in errors:
            self._add_at_path(error.path, error.message)

    def _add_at_path(self, path: str, message: str) -> None:
        field = self._field_at(path)
        if field is None:
            self.add_error(None, f"{path.removeprefix('$.')}: {message}")
        elif field not in self.errors or message not in self.errors[field]:
            self.add_error(field, message)

    def _field_at(self, path: str) -> str | None:
        if path == "$.output":
            return "file" if self.cleaned_data.get("file") else "output"
        match = re.match(r"^\$\.(?:environment\.(\w+)\.(\w+)|parameters\.(\w+))", path)
        if match is None:
            return None
        if match.group(3):
            name = match.group(3)
        elif match.group(2) == "ram_bytes":
            name = "hardware_ram_gib"
        else:
            name = f"{match.group(1)}_{match.group(2)}"
        return name if name in self.fields else None
