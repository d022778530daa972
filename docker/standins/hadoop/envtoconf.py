#!/usr/bin/env python3
"""The official image's envtoconf for XML files: each variable NAME.XML_key=value becomes a
property of name.xml in the destination (the file's name lower-cased)."""

import argparse
import os


def escape(text: str) -> str:
    """XML's three (python3-minimal has no xml package)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


parser = argparse.ArgumentParser()
parser.add_argument("--destination", required=True)
destination = parser.parse_args().destination
files: dict[str, dict[str, str]] = {}
for name, value in os.environ.items():
    prefix, sep, key = name.partition("_")
    if sep and prefix.upper().endswith(".XML") and key:
        files.setdefault(prefix.lower(), {})[key] = value
for file, properties in sorted(files.items()):
    rows = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in sorted(properties.items())
    )
    with open(os.path.join(destination, file), "w") as out:
        out.write(f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n')
