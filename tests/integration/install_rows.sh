# SPDX-License-Identifier: BSD-2-Clause
# Sourced by install_layout.sh and deb_package.sh: docs/install.md's layout
# table as paths, so the doc and the tests cannot drift apart.

# install_rows SRC LIBDIR SYSCONF CUDA(0|1): one documented path a line,
# relative to the prefix (SYSCONF rows absolute when SYSCONF is)
install_rows() {
	local src=$1 libdir=$2 sysconf=$3 cuda=$4
	sed -n '/^<!-- layout:/,/^$/p' "$src/docs/install.md" |
		sed -nE 's/^\| `([^`]+)` \|.*/\1/p' |
		while read -r p; do
			case $p in
			*libreqtrace_cupti.so) [ "$cuda" = 1 ] || continue ;;
			esac
			p=${p/#LIBDIR/$libdir}
			p=${p/#SYSCONF/$sysconf}
			echo "$p"
		done
}

# at ROOT PATH: PATH under ROOT, or PATH itself when it is absolute
at() {
	case $2 in
	/*) echo "$2" ;;
	*) echo "$1/$2" ;;
	esac
}

# cache_value BUILD VAR: a variable from BUILD's CMakeCache.txt
cache_value() {
	sed -nE "s/^$2:[A-Z]+=(.*)/\1/p" "$1/CMakeCache.txt"
}
