# device-vcl-lib.sh: sourced by the device scripts (device-s4.sh, device-s5.sh) for
# their remote modes, with O (the output folder) set.  vcl_setup makes a key, and a
# vendors directory with NVIDIA's ICD and the bundle's libmpigpu-vcl.so;
# start_proxy LOG [VAR=VALUE...] starts a proxy on 127.0.0.1 serving the GPU (pid
# in proxy, port in port); stop_proxy stops it.
vcl_setup() {
  b=$(cd "$(dirname "$(command -v mpigpu-proxy)")/.." && pwd)
  key=$O/key; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key"; chmod 600 "$key"
  mkdir -p /tmp/vcl-vendors; cp /tmp/ocl-vendors/nvidia.icd /tmp/vcl-vendors/
  echo "$b/lib/libmpigpu-vcl.so" > /tmp/vcl-vendors/mpigpu-vcl.icd
}
start_proxy() {
  local log=$1; shift
  env "$@" OCL_ICD_VENDORS=/tmp/ocl-vendors mpigpu-proxy --listen 127.0.0.1:0 --key-file "$key" --device NVIDIA > "$log" 2>&1 &
  proxy=$!
  for i in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
}
stop_proxy() { kill -TERM $proxy; wait $proxy; }
