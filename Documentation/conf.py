# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of kxfer's Documentation/: `make htmldocs` builds
# the pages index.rst lists into build/htmldocs/ (Debian's python3-sphinx).

project = "kxfer"
author = "the kxfer authors"
root_doc = master_doc = "index"

# Netlink specs are YAML, not pages.
exclude_patterns = ["netlink"]

# Literal blocks (::) are shell, C or diagrams: not Python.  Code blocks
# name their language.
highlight_language = "none"

html_theme = "alabaster"
html_title = "kxfer documentation"
html_show_sourcelink = False
html_copy_source = False
