#!/bin/bash
# Test harness for the remote OpenCL path: a build-tree mpigpu-proxy on
# loopback serving PoCL, and an ICD vendors directory that lists the
# build-tree libmpigpu-vcl.so beside PoCL.
#
# Sourced (bash):
#   . test/remote/proxy-env.sh
#   mgvcl_skip_unless_built || exit 77   # only when the remote part is not built
#   mgvcl_start virtual                  # or: native
#   ... run OpenCL programs on platform "$MGVCL_PLATFORM" ...
#   mgvcl_stop                           # fails unless the proxy exited 0
# mgvcl_start makes a temporary directory with a random key file (mode 600),
# starts the proxy on 127.0.0.1:0 (--device Portable), waits for its
# "listening on HOST:PORT" line, and exports OCL_ICD_VENDORS,
# MPIGPU_VCL_SERVERS and MPIGPU_VCL_KEY_FILE.  "native" makes the same vendors
# directory with PoCL alone and starts no proxy.  An EXIT trap stops the proxy
# (SIGTERM), checks that it exited 0 (else the script's status becomes 1) and
# removes the directory.  MGVCL_MODE=native turns "mgvcl_start virtual" into
# a native start, to run a whole script natively.
#
# Run as a program: proxy-env.sh [virtual|native] COMMAND [ARGS...]
#   runs COMMAND under the harness (MGVCL_PLATFORM is set for it).
#
# Also exported: MGVCL_ONLY_VENDORS, a vendors directory with the platform
# under test alone (for programs that pick platform 0).
#
# Settings: abs_top_builddir (make check sets it; default: this file's
# ../..), MGVCL_START_TIMEOUT (seconds to wait for the proxy, default 30),
# MGVCL_POCL_ICD (PoCL's .icd file), MGVCL_DEVICE (--device, default Portable),
# MGVCL_EXIT_HOOK (a command for the EXIT trap, run after the harness's own).

MGVCL_BUILDDIR=${abs_top_builddir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MGVCL_NATIVE_PLATFORM="Portable Computing Language"
MGVCL_VIRTUAL_PLATFORM="mpigpu virtual"
MGVCL_PROXY=$MGVCL_BUILDDIR/mpigpu-proxy
MGVCL_ICD_LIB=$MGVCL_BUILDDIR/.libs/libmpigpu-vcl.so
MGVCL_DIR=
MGVCL_PROXY_PID=
MGVCL_PLATFORM=
# In a sanitizer build (MGVCL_EXT_PRELOAD set by make check) a program not
# built here runs as "$MGVCL_EXT program ...": with the ASan runtime preloaded,
# which the ASan-built ICD needs, and without judging that program's own
# leaks.  Empty otherwise.
MGVCL_EXT=
if [ -n "${MGVCL_EXT_PRELOAD:-}" ] && [ -e "$MGVCL_EXT_PRELOAD" ]; then
    MGVCL_EXT="env LD_PRELOAD=$MGVCL_EXT_PRELOAD ASAN_OPTIONS=detect_leaks=0"
fi
export MGVCL_EXT

mgvcl_err() {
    echo "proxy-env: $*" >&2
}

# 0 when the remote part (proxy and ICD) is built, 1 with a message when it
# is not (configure's --enable-remote off).  make check says which in
# MGVCL_REMOTE_BUILT (yes/no); otherwise the build tree's files decide, and a
# half-built tree counts as built (and then fails).
mgvcl_skip_unless_built() {
    case ${MGVCL_REMOTE_BUILT:-} in
        no)
            echo "proxy-env: remote part not built (configure --enable-remote needs libsodium)"
            return 1 ;;
        yes) return 0 ;;
    esac
    if [ ! -e "$MGVCL_PROXY" ] && [ ! -e "$MGVCL_ICD_LIB" ]; then
        echo "proxy-env: remote part not built (no $MGVCL_PROXY, no $MGVCL_ICD_LIB): configure --enable-remote"
        return 1
    fi
    return 0
}

# PoCL's .icd file: MGVCL_POCL_ICD, else the one in /etc/OpenCL/vendors.
mgvcl_pocl_icd() {
    local f
    if [ -n "${MGVCL_POCL_ICD:-}" ]; then
        echo "$MGVCL_POCL_ICD"
        return 0
    fi
    for f in /etc/OpenCL/vendors/*.icd; do
        grep -q pocl "$f" 2>/dev/null && { echo "$f"; return 0; }
    done
    mgvcl_err "no PoCL .icd under /etc/OpenCL/vendors (Debian: pocl-opencl-icd)"
    return 1
}

mgvcl_start() {
    local mode=${1:-virtual} pocl i addr
    [ "${MGVCL_MODE:-}" = native ] && mode=native
    [ -z "$MGVCL_DIR" ] || { mgvcl_err "already started"; return 1; }
    pocl=$(mgvcl_pocl_icd) || return 1
    MGVCL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mgvcl.XXXXXX") || return 1
    trap mgvcl_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    mkdir "$MGVCL_DIR/native" "$MGVCL_DIR/vendors" || return 1
    cp "$pocl" "$MGVCL_DIR/native/" && cp "$pocl" "$MGVCL_DIR/vendors/" || return 1
    unset MPIGPU_VCL_SERVERS MPIGPU_VCL_KEY_FILE
    if [ "$mode" = native ]; then
        export OCL_ICD_VENDORS=$MGVCL_DIR/native
        export MGVCL_ONLY_VENDORS=$MGVCL_DIR/native
        MGVCL_PLATFORM=$MGVCL_NATIVE_PLATFORM
        export MGVCL_PLATFORM
        return 0
    fi
    [ "$mode" = virtual ] || { mgvcl_err "mode must be virtual or native, not $mode"; return 1; }
    for i in "$MGVCL_PROXY" "$MGVCL_ICD_LIB"; do
        [ -e "$i" ] || { mgvcl_err "$i not built"; return 1; }
    done
    # 32 random bytes, as 64 hex digits, readable by the owner only.
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$MGVCL_DIR/key") || return 1
    # The proxy sees PoCL only, never the virtual platform itself.
    : >"$MGVCL_DIR/proxy.log"
    OCL_ICD_VENDORS=$MGVCL_DIR/native "$MGVCL_PROXY" --listen 127.0.0.1:0 \
        --key-file "$MGVCL_DIR/key" --device "${MGVCL_DEVICE:-Portable}" \
        </dev/null >"$MGVCL_DIR/proxy.log" 2>&1 &
    MGVCL_PROXY_PID=$!
    addr=
    for ((i = 0; i < ${MGVCL_START_TIMEOUT:-30} * 10; i++)); do
        addr=$(sed -n 's/^mpigpu-proxy: listening on \([^ ]*:[0-9]*\).*/\1/p' "$MGVCL_DIR/proxy.log" | head -n 1)
        [ -n "$addr" ] && break
        kill -0 "$MGVCL_PROXY_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        if kill -0 "$MGVCL_PROXY_PID" 2>/dev/null; then
            mgvcl_err "mpigpu-proxy printed no 'listening on' line in ${MGVCL_START_TIMEOUT:-30} s; its log:"
        else
            mgvcl_err "mpigpu-proxy exited before listening; its log:"
        fi
        sed 's/^/  /' "$MGVCL_DIR/proxy.log" >&2
        kill -KILL "$MGVCL_PROXY_PID" 2>/dev/null
        wait "$MGVCL_PROXY_PID" 2>/dev/null
        MGVCL_PROXY_PID=
        return 1
    fi
    printf '%s\n' "$MGVCL_ICD_LIB" >"$MGVCL_DIR/vendors/mpigpu-vcl.icd"
    mkdir "$MGVCL_DIR/vcl-only" && cp "$MGVCL_DIR/vendors/mpigpu-vcl.icd" "$MGVCL_DIR/vcl-only/" || return 1
    export MGVCL_ONLY_VENDORS=$MGVCL_DIR/vcl-only
    export OCL_ICD_VENDORS=$MGVCL_DIR/vendors
    export MPIGPU_VCL_SERVERS=$addr
    export MPIGPU_VCL_KEY_FILE=$MGVCL_DIR/key
    MGVCL_PLATFORM=$MGVCL_VIRTUAL_PLATFORM
    export MGVCL_PLATFORM
    return 0
}

# Stops the proxy with SIGTERM (SIGKILL after 10 s); 0 only if it exited 0.
mgvcl_stop_proxy() {
    local pid=$MGVCL_PROXY_PID st i
    [ -n "$pid" ] || return 0
    MGVCL_PROXY_PID=
    # MGVCL_STOP_WAIT: seconds the proxy has to end its sessions and exit
    # (10; the sanitizer build gives 60: a session that compiled programs
    # frees LLVM's modules at its end, and every free there takes a slow
    # unwind under LSan, more than 10 s for piglit's cl-api-link-program).
    local wait=${MGVCL_STOP_WAIT:-10}
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < wait * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        mgvcl_err "mpigpu-proxy (pid $pid) still running $wait s after SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        st=1
    else
        wait "$pid"
        st=$?
    fi
    if [ "$st" -ne 0 ]; then
        mgvcl_err "mpigpu-proxy exited with status $st after SIGTERM; its log:"
        sed 's/^/  /' "$MGVCL_DIR/proxy.log" >&2
        return 1
    fi
    return 0
}

# Prints the proxy's log so far (for test logs).
mgvcl_proxy_log() {
    [ -n "$MGVCL_DIR" ] && [ -f "$MGVCL_DIR/proxy.log" ] && sed 's/^/proxy: /' "$MGVCL_DIR/proxy.log"
}

mgvcl_stop() {
    local st=0
    mgvcl_stop_proxy || st=1
    [ -n "$MGVCL_DIR" ] && rm -rf "$MGVCL_DIR"
    MGVCL_DIR=
    unset OCL_ICD_VENDORS MPIGPU_VCL_SERVERS MPIGPU_VCL_KEY_FILE MGVCL_PLATFORM MGVCL_ONLY_VENDORS
    trap - INT TERM
    if [ -n "${MGVCL_EXIT_HOOK:-}" ]; then
        trap "$MGVCL_EXIT_HOOK" EXIT
    else
        trap - EXIT
    fi
    return $st
}

mgvcl_cleanup() {
    local st=$?
    mgvcl_stop || st=1
    [ -n "${MGVCL_EXIT_HOOK:-}" ] && eval "$MGVCL_EXIT_HOOK"
    exit $st
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    mode=virtual
    case ${1:-} in
        virtual | native) mode=$1; shift ;;
    esac
    [ $# -gt 0 ] || { echo "usage: proxy-env.sh [virtual|native] COMMAND [ARGS...]" >&2; exit 2; }
    mgvcl_start "$mode" || exit 1
    "$@"
    st=$?
    mgvcl_stop || exit 1
    exit $st
fi
