#!/bin/sh
# debversion.sh VERSION: prints the Debian package version of a `git describe --tags --always
# --dirty` version, ordered as Debian orders versions:
#   v1.2.3                    1.2.3
#   v1.2.3-rc1                1.2.3~rc1             (before 1.2.3)
#   v1.2.3-4-gabc1234         1.2.3+4.gabc1234      (after 1.2.3)
#   v1.2.3-4-gabc1234-dirty   1.2.3+4.gabc1234.dirty
#   abc1234 (no tag)          0.0.0~gabc1234        (before any release)
#   dev (no git)              0.0.0~dev
# and fails on anything that would not be a valid Debian version.
set -eu
v=${1#v}
dirty=
case $v in *-dirty) dirty=1 v=${v%-dirty} ;; esac
case $v in
[0-9]*.*) v=$(printf '%s' "$v" | sed -E 's/-([0-9]+)-g([0-9a-f]+)$/+\1.g\2/; s/-/~/g') ;;
*) if printf '%s' "$v" | grep -Eqx '[0-9a-f]{4,40}'; then v=0.0.0~g$v; else v=0.0.0~$v; fi ;;
esac
if [ -n "$dirty" ]; then
	case $v in *+*) v=$v.dirty ;; *) v=$v+dirty ;; esac
fi
if ! printf '%s' "$v" | grep -Eqx '[0-9][A-Za-z0-9.+~]*'; then
	echo "debversion.sh: $1 gives $v, which is no Debian version" >&2
	exit 1
fi
printf '%s\n' "$v"
