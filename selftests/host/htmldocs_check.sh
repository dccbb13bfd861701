#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# htmldocs_check: the documentation builds and the README's links lead
# somewhere.  `make htmldocs` (Sphinx, -W: a warning is an error, so a
# page left out of index.rst's toctree, a broken reference or bad rst
# fails it) must succeed, every page of Documentation/ must come out as
# HTML, and every relative link of README.md must name a file of the
# tree.  KTAP output, one test per check; run by run-suite as host test
# htmldocs_test.

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/htmldocs
n=0 failed=0

check() { # NAME CMD...: one KTAP result
	local name=$1 text

	shift
	n=$((n + 1))
	if text=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		failed=$((failed + 1))
		echo "$text" | sed 's/^/# /'
		echo "not ok $n $name"
	fi
}

# Sphinx prints nothing but its warnings (-q); any fails the build (-W).
sphinx_builds() {
	make -s -C "$top" htmldocs
}

every_page_built() {
	local rst page missing=0

	for rst in "$top"/Documentation/*.rst; do
		page=$(basename "$rst" .rst)
		if [[ ! -s $out/$page.html ]]; then
			echo "no $out/$page.html for $rst"
			missing=1
		fi
	done
	return "$missing"
}

# [text](path) and [text](path#anchor) with a relative path
readme_links_resolve() {
	local link bad=0

	while read -r link; do
		link=${link%%#*}
		[[ -z $link || $link == *://* || $link == mailto:* ]] && continue
		if [[ ! -e $top/$link ]]; then
			echo "README.md links to $link, which is not in the tree"
			bad=1
		fi
	done < <(grep -o '](\([^)]*\))' "$top/README.md" | sed 's/^](\(.*\))$/\1/')
	return "$bad"
}

echo "TAP version 13"
echo "1..3"
check sphinx_builds_without_warnings sphinx_builds
check every_page_built every_page_built
check readme_links_resolve readme_links_resolve
echo "# Totals: pass:$((n - failed)) fail:$failed"
[ "$failed" = 0 ]
