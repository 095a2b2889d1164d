#!/bin/sh
# trace_overlap.py on a hand-made trace whose overlaps are known: request 0
# uploads [0,10), computes [10,30), downloads [30,35); request 1 uploads
# [20,25) (under request 0's kernel), computes [35,50), downloads [50,55). A
# host task and a device event of another category are ignored.
set -eu
script="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
cat > "$dir/trace.json" <<'JSON'
{"traceEvents":[
{"name":"process_name","ph":"M","pid":1000,"tid":0,"args":{"name":"GPU device"}},
{"name":"execute","cat":"node","ph":"X","pid":0,"tid":0,"ts":0,"dur":100,"args":{"instance":1}},
{"name":"reorder:x:plain->cl","cat":"device","ph":"X","pid":1000,"tid":0,"ts":0,"dur":10,"args":{"request":0,"stage":"upload"}},
{"name":"add0","cat":"device","ph":"X","pid":1000,"tid":0,"ts":10,"dur":20,"args":{"request":0,"stage":"execute"}},
{"name":"reorder:y:cl->plain","cat":"device","ph":"X","pid":1000,"tid":0,"ts":30,"dur":5,"args":{"request":0,"stage":"download"}},
{"name":"reorder:x:plain->cl","cat":"device","ph":"X","pid":1000,"tid":1,"ts":20,"dur":5,"args":{"request":1,"stage":"upload"}},
{"name":"add0","cat":"device","ph":"X","pid":1000,"tid":1,"ts":35,"dur":15,"args":{"request":1,"stage":"execute"}},
{"name":"reorder:y:cl->plain","cat":"device","ph":"X","pid":1000,"tid":1,"ts":50,"dur":5,"args":{"request":1,"stage":"download"}},
{"name":"other","cat":"other","ph":"X","pid":1000,"tid":1,"ts":0,"dur":55,"args":{"request":2,"stage":"execute"}}
]}
JSON
python3 "$script" --json "$dir/trace.json" > "$dir/out.json"
python3 - "$dir/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = {"commands": 6, "requests": 2, "window_us": 55.0, "device_busy_us": 55.0,
        "two_or_more_requests_us": 5.0}
for k, v in want.items():
    assert r[k] == v, f"{k}: {r[k]} != {v}"
assert r["stage_busy_us"] == {"upload": 15.0, "execute": 35.0, "download": 10.0}, r["stage_busy_us"]
pairs = dict.fromkeys(r["pairs_us"], 0.0)
pairs["upload|execute"] = 5.0
assert r["pairs_us"] == pairs, r["pairs_us"]
print("trace_overlap: ok")
PY
# A trace without device events is an error that says so.
echo '{"traceEvents":[]}' > "$dir/empty.json"
if python3 "$script" "$dir/empty.json" 2> "$dir/err.txt"; then
    echo "a trace without device events was accepted" >&2
    exit 1
fi
grep -q "no device events" "$dir/err.txt"
