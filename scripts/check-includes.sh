#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The module rule (docs/architecture.md) as far as the compiler cannot see
# it: a file under src/ includes another module's headers only as
# "<module>/x.h", which must be a public one (src/<module>/include/<module>/x.h),
# and never by a path that climbs out of its folder ("../x.h"). The build
# catches the rest: a module's private folder and an undeclared dependency's
# headers are not on the include path.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS=: read -r file line text; do
	inc=$(sed -E 's/^#include "([^"]+)".*/\1/' <<<"$text")
	case "$inc" in
	../* | */../* | src/*)
		echo "$file:$line: $inc: climbs out of the module's folder"
		bad=1
		continue
		;;
	esac
	mod=${inc%%/*}
	[ "$mod" != "$inc" ] || continue # a bare name: the file's own module
	[ -d "src/$mod/include" ] || continue # not a module (a skeleton, a BPF header)
	if [ ! -f "src/$mod/include/$inc" ]; then
		echo "$file:$line: $inc: not a public header of module $mod"
		bad=1
	fi
done < <(git ls-files 'src/*.c' 'src/*.h' | xargs grep -n '^#include "' || true)
exit $bad
