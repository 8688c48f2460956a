#!/usr/bin/env bash
# Machine set-up for building and testing Ember (idempotent; safe to run before every command).
# System packages come from Debian; the Python tools from PyPI.
set -euo pipefail

packages=()
command -v g++ >/dev/null || packages+=(g++)
command -v ccache >/dev/null || packages+=(ccache)          # makes rebuilds of core fast
command -v chromium >/dev/null || packages+=(chromium)      # renders the compatibility page in a test
command -v git >/dev/null || packages+=(git)
[ -e /usr/include/gloo/config.h ] || packages+=(libgloo-dev)  # ember.distributed's engine (ember._C_gloo)
# FFmpeg for emberaudio._ffmpeg and embervision._video (and the ffmpeg CLI their tests make media
# with); libjpeg-turbo and libpng for embervision._image
for lib in libavformat-dev libavcodec-dev libavfilter-dev libavutil-dev libswresample-dev libswscale-dev \
           libjpeg62-turbo-dev libpng-dev; do
  dpkg -s "$lib" >/dev/null 2>&1 || packages+=("$lib")
done
command -v ffmpeg >/dev/null || packages+=(ffmpeg)
command -v pkg-config >/dev/null || packages+=(pkg-config)
command -v espeak-ng >/dev/null || packages+=(espeak-ng)    # synthesizes the speech of docs/examples/audio_streaming_asr.py
if ((${#packages[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check "nox>=2025.2" "uv>=0.5"
