#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on one machine: installs, builds, then moves frames over 127.0.0.1 the way
# two workstations would, verified frame by frame, and saves one received frame as PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh >/dev/null
bin=build
out=${DEMO_OUT:-demo-output}
mkdir -p "$out"
port=${DEMO_PORT:-5600}

run_pair() {  # run_pair "recv flags" "send flags"
  # shellcheck disable=SC2086
  $bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port $1 &
  local recv=$!
  sleep 0.3
  # shellcheck disable=SC2086
  $bin/sender/rdmavideo-send --connect 127.0.0.1:$port $2
  wait $recv
}

echo "== 1. 1080p60 UYVY in real time for 5 s, every frame checksummed and verified"
run_pair "--verify --stats-json $out/1080p60-recv.json" \
  "--testsrc -s 1920x1080 -r 60 --pix-fmt uyvy422 --realtime --duration 5 --checksum"

echo "== 2. 4K RGBA as fast as the receiver takes it (600 frames, no drops)"
run_pair "--stats-json $out/4k-recv.json" \
  "--testsrc -s 3840x2160 --pix-fmt rgba --frames 600"

echo "== 3. Four cameras with their sound into one recorder: four 1080p senders at once, each"
echo "      recorded with its audio track (a tone of its own pitch, beeping on the instant its"
echo "      picture flashes) to its own ProRes 422 HQ + PCM file named from a template, dated"
echo "      and timecoded to line up; the senders prove a shared key (a sender without it is"
echo "      refused), memory is bounded, Prometheus metrics are scraped while they run, and"
echo "      each file's sync is measured as a person hears it"
key=$out/shared.key
rm -f "$key"
$bin/doctor/rdmavideo-doctor --new-key "$key"
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --max-streams 4 --key-file "$key" \
  --max-memory 2G --metrics 127.0.0.1:$((port + 1)) \
  --output "$out/{name}.mov" --stats-json "$out/four-cameras-recv.json" &
recv=$!
sleep 0.3
$bin/sender/rdmavideo-send --connect 127.0.0.1:$port --name impostor --testsrc --frames 10 \
  --quiet || echo "(the sender without the key was refused, as it should be)"
pitch=0
for cam in cam1 cam2 cam3 cam4; do
  pitch=$((pitch + 500))
  $bin/sender/rdmavideo-send --connect 127.0.0.1:$port --name $cam --testsrc --key-file "$key" \
    -s 1920x1080 -r 60 --pix-fmt yuv422p10le --frames 150 --tone $pitch --quiet &
done
sleep 1
python3 - "$((port + 1))" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
for line in text.splitlines():
    if line.startswith(("rdmavideo_stream_frames_total", "rdmavideo_receiver_memory_used",
                        "rdmavideo_receiver_connections_refused_total")):
        print("metrics:", line)
PY
wait $recv
for cam in cam1 cam2 cam3 cam4; do
  ffprobe -v error -count_frames -select_streams v:0 \
    -show_entries stream=codec_name,profile,nb_read_frames:stream_tags=timecode \
    -of compact=p=0 "$out/$cam.mov" | head -2 | tr '\n' ' ' | sed "s|^|$cam.mov: |"
  ffprobe -v error -select_streams a:0 -show_entries stream=codec_name,sample_rate,channels \
    -of compact=p=0 "$out/$cam.mov" | tr '\n' ' '
  echo "| $(python3 tests/support/av_sync.py --summary "$out/$cam.mov")"
done

echo "== 4. Fan-out: one live 1080p60 camera to a ProRes recorder and a verifying monitor at"
echo "      once, each on its own connection and ring, from the same buffers (no copy each)"
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$((port + 2)) --output "$out/fanout-recorder.mov" \
  --quiet --stats-json "$out/fanout-recorder.json" &
recorder=$!
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$((port + 3)) --verify --quiet \
  --stats-json "$out/fanout-monitor.json" &
monitor=$!
sleep 0.3
$bin/sender/rdmavideo-send --connect 127.0.0.1:$((port + 2)) --connect 127.0.0.1:$((port + 3)) \
  --name studio --testsrc -s 1920x1080 -r 60 --pix-fmt yuv422p10le --realtime --duration 3 \
  --checksum --quiet --stats-json "$out/fanout-send.json"
wait $recorder $monitor
python3 - "$out" <<'PY'
import json, sys
send = json.load(open(f"{sys.argv[1]}/fanout-send.json"))
for d in send["destinations"]:
    print(f"fan-out: {d['address']} {d['transport']} {d['state']}: {d['frames']} frames, "
          f"{d['dropped']} dropped")
mon = json.load(open(f"{sys.argv[1]}/fanout-monitor.json"))
print(f"fan-out: the monitor verified {mon['frames']} frames, {mon['checksum_failures']} failed")
PY

echo "== 5. ffmpeg in, ffmpeg out: testsrc2 through stdin, received frame saved as PNG"
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=1280x720:rate=30 -frames:v 16 \
  -pix_fmt yuv420p -f rawvideo - |
  { sleep 0.3; $bin/sender/rdmavideo-send --connect 127.0.0.1:$port -i - -s 1280x720 -r 30 \
      --pix-fmt yuv420p --quiet; } &
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --output - --quiet |
  ffmpeg -nostdin -loglevel error -f rawvideo -pix_fmt yuv420p -s 1280x720 -i - \
    -vf "select=eq(n\,15)" -frames:v 1 -y "$out/frame.png"
wait
if [ -e $bin/gst-plugin/libgstrdmavideo.so ]; then
  export GST_PLUGIN_PATH=$PWD/$bin/gst-plugin GST_REGISTRY_1_0=$PWD/$bin/gst-registry.bin
  echo "== 6. GStreamer with sound: videotestsrc and two tones into rdmasink's video and audio"
  echo "      pads, recorded as ProRes with two PCM tracks; rdmavideo-send's beeps on its flashes"
  echo "      into rdmasrc's video and audio_0 pads, into qtmux, the sync measured"
  $bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --output "$out/gst.mov" --quiet &
  recv=$!
  sleep 0.3
  gst-launch-1.0 -q videotestsrc num-buffers=120 pattern=smpte \
    ! video/x-raw,format=UYVY,width=1280,height=720,framerate=60/1 \
    ! rdmasink name=s host=127.0.0.1 port=$port checksum=true sync=false \
    audiotestsrc num-buffers=200 freq=440 ! audio/x-raw,format=F32LE,rate=48000,channels=2 \
    ! taginject tags="title=Program" ! s.audio_0 \
    audiotestsrc num-buffers=200 freq=880 ! audio/x-raw,format=S16LE,rate=48000,channels=1 \
    ! taginject tags="title=Commentary" ! s.audio_1
  wait $recv
  ffprobe -v error -show_entries stream=index,codec_name,channels:stream_tags=handler_name \
    -of compact=p=0:nk=0 "$out/gst.mov" | sed 's/^/      /'
  gst-launch-1.0 -q -e rdmasrc port=$port name=r ! queue ! videoconvert \
    ! video/x-raw,format=UYVY ! queue ! qtmux name=m ! filesink location="$out/gst-src.mov" \
    r.audio_0 ! queue ! audioconvert ! m. &
  gst=$!
  sleep 1
  $bin/sender/rdmavideo-send --connect 127.0.0.1:$port --testsrc -s 1280x720 -r 30 \
    --tone 1000 --frames 90 --quiet
  wait $gst
  python3 tests/support/av_sync.py "$out/gst-src.mov" --summary | sed 's/^/      /'
fi
echo "== 7. GPU memory: what this machine offers (the doctor's GPU section), then 4K RGBA from"
echo "      GPU memory into a GPU ring, verified on the GPU by a kernel, where there is a GPU"
# The doctor exits 1 where a check fails (no RDMA device here, say): the demo goes on.
{ $bin/doctor/rdmavideo-doctor || true; } | sed -n '/^GPU memory/,/^$/p'
if { $bin/doctor/rdmavideo-doctor --json || true; } | python3 -c \
    'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpu"].get("cuda_devices") else 1)'; then
  run_pair "--memory cuda --verify --stats-json $out/gpu-recv.json" \
    "--testsrc -s 3840x2160 --pix-fmt rgba --frames 300 --memory cuda"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["streams"][0]; print("verify:", s.get("verify"), "downloads:", s.get("downloads"), "path:", s.get("gpu_path"))' "$out/gpu-recv.json"
else
  $bin/sender/rdmavideo-send --connect 127.0.0.1:$port --testsrc --memory cuda --quiet ||
    echo "(no GPU here: --memory cuda says why in one line and sends nothing)"
  clip=$(ls "$out"/*.mov 2>/dev/null | head -1)
  if [ -n "$clip" ]; then
    $bin/sender/rdmavideo-send --connect 127.0.0.1:$port -i "$clip" --hwaccel cuda --quiet ||
      echo "(and NVDEC decoding, --hwaccel cuda, likewise)"
  fi
fi
if [ -e $bin/obs-plugin/rdmavideo-obs.so ] && command -v Xvfb >/dev/null; then
  echo "== 8. OBS to a recorder with its sound: OBS's program picture (libobs on a virtual screen,"
  echo "      a colour source and two clips, each clip's sound on its own mix track) through the"
  echo "      rdmavideo_output plugin into ProRes with both tracks, each track's sync measured"
  echo "      against its clip's flashes; then a 10-bit Rec. 2100 PQ canvas lands as HDR ProRes"
  Xvfb :97 -screen 0 1280x720x24 -nolisten tcp 2>/dev/null &
  xvfb=$!
  sleep 1
  for hz in 1000 700; do python3 tests/support/media_rig.py clip "$out/clip$hz.mp4" $hz; done
  obs_run() {  # obs_run OUTPUT "obs_host flags"
    $bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --output "$1" --quiet &
    local recv=$!
    sleep 0.3
    # shellcheck disable=SC2086
    DISPLAY=:97 $bin/tests/obs/obs_host --plugin $bin/obs-plugin/rdmavideo-obs.so \
      --destinations 127.0.0.1:$port $2 | grep '^{"frames"' | python3 -c \
      'import json,sys; r=json.load(sys.stdin); f=r["frames"]; print("OBS handed %d frames, %d dropped, %.2f ms a frame in its video callback" % (f, r["dropped"], r["callback_ns"] / 1e6 / max(1, f)))'
    wait $recv
  }
  obs_run "$out/obs.mov" "--seconds 8 --clip-a $out/clip1000.mp4 --clip-b $out/clip700.mp4 --tracks 3"
  ffprobe -v error -show_entries stream=codec_name,profile,pix_fmt,color_space:stream_tags=handler_name \
    -of compact=p=0 "$out/obs.mov" | grep -v "^codec_name=$"
  python3 tests/support/av_sync.py "$out/obs.mov" --audio 0 --crop 320:180:0:0 --summary | sed 's/^/track 1: /'
  python3 tests/support/av_sync.py "$out/obs.mov" --audio 1 --crop 320:180:320:0 --summary | sed 's/^/track 2: /'
  obs_run "$out/obs-hdr.mov" "--seconds 3 --format P010 --colorspace 2100pq --tracks 1"
  ffprobe -v error -select_streams v -show_entries stream=codec_name,pix_fmt,color_primaries,color_transfer,color_space \
    -of compact=p=0 "$out/obs-hdr.mov"
  kill $xvfb
fi
echo "== 9. Remote compositing: four live senders (three colours and a test pattern with its tone)"
echo "      into one 1280x720 grid recorded as ProRes with tile 4's sound; the second sender dies"
echo "      halfway and its tile shows no signal while the recording goes on"
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --composite grid --canvas 1280x720@30 --max-streams 4 \
  --composite-audio 4 --output "$out/wall.mov" --stats-json "$out/wall.json" --quiet &
recv=$!
sleep 0.3
for c in 0xC03030:left 0x30C030:middle 0x3030C0:right; do
  $bin/sender/rdmavideo-send --connect 127.0.0.1:$port --name "${c#*:}" -f lavfi -i "color=c=${c%:*}:s=640x360:r=30" \
    --realtime --duration 6 --quiet &
  sleep 0.3
done
middle=$(jobs -p | tail -2 | head -1)
$bin/sender/rdmavideo-send --connect 127.0.0.1:$port --name pattern --testsrc -s 1280x720 -r 30 --tone 1000 \
  --realtime --duration 6 --quiet &
sleep 3
{ kill -9 "$middle" && wait "$middle"; } 2>/dev/null || true
wait $recv
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["canvas"]; print("canvas: %d frames %dx%d, %d late; tiles: %s" % (c["frames"], c["width"], c["height"], c["late"], ", ".join("%s %d shown %d repeated" % (t["name"], t["composited"], t["repeats"]) for t in c["tiles"])))' "$out/wall.json"
python3 tests/support/av_sync.py "$out/wall.mov" --crop 640:360:640:360 --summary | sed 's/^/tile 4 sound: /'
ffmpeg -nostdin -loglevel error -ss 4.5 -i "$out/wall.mov" -frames:v 1 -y "$out/wall.png"
echo "== 10. Windows into a Linux recorder: rdmavideo-send.exe and the OBS plugin's DLL, cross-built"
echo "      with MinGW-w64 and run under wine (not Windows), into this machine's receiver; the"
echo "      .exe sends its tone and a shared key (1080p60 on 8 cores or more, 720p30 on fewer: wine"
echo "      and the ProRes encoder share them), recorded as ProRes and its sync"
echo "      measured; the plugin, driven by the project's libobs host, sends a P010 PQ canvas"
echo "      with two mix tracks; then the zip and the installer a Windows user installs"
./scripts/build-windows.sh >/dev/null
./scripts/package-windows.sh >/dev/null
export WINEPREFIX=$PWD/build-windows/wine
wine=./scripts/wine-run.sh
[ -e "$out/demo.key" ] || $bin/doctor/rdmavideo-doctor --new-key "$out/demo.key" >/dev/null 2>&1 ||
  { head -c 32 /dev/urandom >"$out/demo.key" && chmod 600 "$out/demo.key"; }
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --key-file "$out/demo.key" --verify \
  --output "$out/windows.mov" --quiet 2>"$out/windows-recv.log" &
recv=$!
sleep 0.3
windows_size=(-s 1280x720 -r 30)
[ "$(nproc)" -ge 8 ] && windows_size=(-s 1920x1080 -r 60)
$wine build-windows/sender/rdmavideo-send.exe --connect 127.0.0.1:$port --key-file "$out/demo.key" \
  --testsrc "${windows_size[@]}" --tone 1000 --realtime --duration 4 --quiet 2>&1 | grep -E "connected|sent"
wait $recv
python3 tests/support/av_sync.py "$out/windows.mov" --summary | sed 's/^/rdmavideo-send.exe: /'
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --output "$out/windows-obs.mov" --quiet 2>"$out/windows-obs-recv.log" &
recv=$!
sleep 0.3
$wine build-windows/tests/windows/obs/obs_host_windows.exe --plugin build-windows/obs-plugin/rdmavideo-obs.dll \
  --destinations 127.0.0.1:$port --format p010 --colorspace 2100pq --tracks 3 --seconds 3 2>/dev/null |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("the plugin under wine sent %d frames, %d dropped" % (r["stats"]["frames"], r["stats"]["dropped"]))'
wait $recv
ffprobe -v error -select_streams v -show_entries stream=codec_name,pix_fmt,color_transfer \
  -of compact=p=0 "$out/windows-obs.mov"
for t in 0 1; do python3 tests/support/av_sync.py "$out/windows-obs.mov" --audio $t --summary | sed "s/^/plugin track $((t + 1)): /"; done
./scripts/wine-run.sh --server -k || true
ls build-windows/package/*.zip build-windows/package/*-setup.exe
echo "== 11. ProRes coded by the project's own encoder (--encoder rdmavideo_prores): on a GPU,"
echo "      frames received into GPU memory are coded there and only the coded frames come down;"
echo "      without one (as here) its CPU twin codes the same bytes and says so once. FFmpeg"
echo "      and MediaInfo name the profile, and the tone stays on its flashes"
own_memory=host
if { $bin/doctor/rdmavideo-doctor --json || true; } | python3 -c \
    'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpu"].get("cuda_devices") else 1)'; then
  own_memory=cuda
fi
run_pair "--memory $own_memory --output $out/own-prores.mov --codec prores_hq --encoder rdmavideo_prores --stats-json $out/own-prores.json" \
  "--testsrc -s 640x360 -r 30 --tone 1000 --frames 90 --quiet" 2>&1 | grep -E "rdmavideo_prores|recorded"
ffprobe -v error -select_streams v -show_entries stream=codec_name,profile,codec_tag_string,pix_fmt \
  -of compact=p=0 "$out/own-prores.mov"
mediainfo --Inform="Video;MediaInfo: %Format% %Format_Profile% (%CodecID%), %FrameCount% frames" "$out/own-prores.mov"
python3 tests/support/av_sync.py "$out/own-prores.mov" --summary | sed 's/^/own encoder: /'
echo "== 12. Embedded: the SDK (librdmavideo, its C header, CMake package and pkg-config file)"
echo "      installed into a prefix, the C example built against it out of tree, and a Python"
echo "      program (examples/python/sender.py: numpy frames lent from the sender's pool, a"
echo "      tone beside them) sending into a ProRes recorder"
sdk=$(cd "$out" && pwd)/sdk
rm -rf "$sdk"
cmake --install build --prefix "$sdk" --component sdk >/dev/null
cmake --install build --prefix "$sdk" --component sdk_dev >/dev/null
cmake -S examples -B "$out/sdk/examples" -G Ninja -DCMAKE_PREFIX_PATH="$sdk" >/dev/null
cmake --build "$out/sdk/examples" >/dev/null
python=/usr/bin/python3  # Debian's, with python3-numpy
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --verify --quiet &
recv=$!
sleep 0.3
"$out/sdk/examples/rdmavideo-example-sender" -n 120 -s 1280x720 127.0.0.1:$port
wait $recv
$bin/receiver/rdmavideo-recv --listen 127.0.0.1:$port --output "$out/python.mov" --codec prores_hq \
  --quiet &
recv=$!
sleep 0.3
RDMAVIDEO_LIBRARY=$(find "$sdk" -name librdmavideo.so.0) PYTHONPATH=python \
  $python examples/python/sender.py -n 120 -s 1280x720 127.0.0.1:$port
wait $recv
ffprobe -v error -show_entries stream=codec_type,codec_name,profile,sample_rate:format=duration \
  -of compact=p=0 "$out/python.mov"
echo "== 13. Found and routed: on a host of its own (a network namespace with its own avahi-daemon),"
echo "      a recorder advertises itself by DNS-SD and runs an NMOS node; rdmavideo-doctor"
echo "      --discover lists it; a sender connects to it by name; then an NMOS sender is routed"
echo "      into it by an IS-05 activation, as a facility's controller does (docs/nmos.md)"
/usr/bin/python3 scripts/demo-routing.py $bin "$out"
echo "demo: summaries in $out/*.json, received frames in $out/*.png, recordings in $out/*.mov"
