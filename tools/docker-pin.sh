#!/bin/sh
# docker-pin.sh DOCKERFILE: resolves the tag of every FROM image of DOCKERFILE
# and rewrites its line as tag@digest, the digest of the tag's multi-platform
# index now. Run by `make docker-pin`; needs `docker buildx` and access to the
# registries. RESOLVE overrides the command that prints a reference's digest.
set -eu
file=${1:?usage: docker-pin.sh DOCKERFILE}
resolve=${RESOLVE:-"docker buildx imagetools inspect --format {{.Manifest.Digest}}"}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cp "$file" "$tmp"
grep -E '^FROM[[:space:]]' "$file" | while read -r _ a b _; do
	ref=$a
	case $a in --platform=*) ref=$b ;; esac
	tagged=${ref%%@*}
	case $tagged in *:*) ;; *) continue ;; esac # a stage name, or no tag to follow
	digest=$($resolve "$tagged" | tr -d '"')
	case $digest in sha256:????????????????????????????????????????????????????????????????) ;;
	*) echo "docker-pin: $tagged resolved to '$digest', not a sha256 digest" >&2; exit 1 ;;
	esac
	sed -i "s|^\(FROM.*[[:space:]]\)$ref\([[:space:]]\)|\1$tagged@$digest\2|; s|^\(FROM.*[[:space:]]\)$ref\$|\1$tagged@$digest|" "$tmp"
	echo "$tagged@$digest"
done
cp "$tmp" "$file"
