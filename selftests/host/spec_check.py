#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""spec_check: Documentation/netlink/kxfer.yaml against uapi/linux/kxfer.h.

Generates, from the YAML spec, a C file of static assertions that every
constant, enum entry, attribute and command the spec names has the value
the spec implies in the uapi header, compiles it against the header, and
reports the result as TAP.  Naming follows the genetlink-c conventions:
KXFER_A_<SET>_<ATTR>, KXFER_CMD_<OP>, <name-prefix><ENTRY> for enums.
"""
import os
import subprocess
import sys
import tempfile

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cname(*parts):
    return "_".join(p.replace("-", "_").upper() for p in parts if p)


def main():
    with open(os.path.join(TOP, "Documentation/netlink/kxfer.yaml")) as f:
        spec = yaml.safe_load(f)
    fam = spec["name"]
    checks = []
    for d in spec.get("definitions", []):
        if d["type"] == "const":
            checks.append((cname(fam, d["name"]), d["value"]))
        elif d["type"] in ("enum", "flags"):
            prefix = d.get("name-prefix", f"{fam}-{d['name']}-")
            for i, e in enumerate(d["entries"]):
                name = e if isinstance(e, str) else e["name"]
                val = (1 << i) if d["type"] == "flags" else i
                checks.append((cname(prefix + name), val))
    for aset in spec["attribute-sets"]:
        for i, a in enumerate(aset["attributes"], start=1):
            checks.append((cname(fam, "a", aset["name"], a["name"]), i))
        checks.append((cname(fam, "a", aset["name"], "max"),
                       len(aset["attributes"])))
    for i, op in enumerate(spec["operations"]["list"], start=1):
        checks.append((cname(fam, "cmd", op["name"]), i))
    checks.append((cname(fam, "cmd", "max"), len(spec["operations"]["list"])))

    src = ["#include <linux/kxfer.h>"]
    for name, val in checks:
        src.append(f'_Static_assert({name} == {val}, "{name} is not {val}");')
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, "spec.c")
        with open(c, "w") as f:
            f.write("\n".join(src) + "\n")
        r = subprocess.run(["cc", "-fsyntax-only", "-I", os.path.join(TOP, "uapi"), c],
                           capture_output=True, text=True)
    print("TAP version 13")
    print("1..1")
    if r.returncode:
        print("# " + r.stderr.replace("\n", "\n# "))
        print("not ok 1 spec.yaml_matches_uapi")
        return 1
    print(f"# {len(checks)} names checked")
    print("ok 1 spec.yaml_matches_uapi")
    return 0


if __name__ == "__main__":
    sys.exit(main())
