#!/bin/bash
# test_format.sh SOURCE_DIR: every C file of the project is formatted as
# .clang-format says (clang-format-19, as Debian ships it: another version
# formats some constructs differently). Prints the files that are not, and
# how to fix them.
root=${1:?usage: test_format.sh SOURCE_DIR}
cf=$(command -v clang-format-19) ||
	{ echo "FAIL clang-format-19 missing (apt-get install clang-format-19; scripts/test installs it)"; exit 1; }
cd "$root" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' \) -print)
fi
[ ${#files[@]} -gt 100 ] || { echo "FAIL only ${#files[@]} C files found under $root"; exit 1; }
# one run over all of them; each difference is reported as FILE:LINE:COL
mapfile -t bad < <("$cf" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*code should be clang-formatted.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
	printf 'not formatted: %s\n' "${bad[@]}"
	echo "FAIL ${#bad[@]} of ${#files[@]} files differ from .clang-format: run clang-format-19 -i on them"
	exit 1
fi
echo "PASS ${#files[@]} C files match .clang-format"
