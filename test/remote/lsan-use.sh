# Sourced by test/remote scripts whose programs drive PoCL in their own
# process (PoCL 3.1 keeps a few allocations, which LeakSanitizer would report).
#
#   lsan_use SUPP OUT: LSAN_OPTIONS names one suppressions file, OUT: SUPP's
#   lines and those of the file it named already (the sanitizer build's
#   test/lsan.supp), since LSan reads only the last suppressions= it is given.
#   The caller removes OUT.
lsan_use() {
    local o rest=
    cat "$1" >"$2" || return 1
    IFS=: read -ra opts <<<"${LSAN_OPTIONS:-}"
    for o in "${opts[@]}"; do
        case $o in
        suppressions=*) cat "${o#suppressions=}" >>"$2" 2>/dev/null ;;
        "") ;;
        *) rest="$rest:$o" ;;
        esac
    done
    export LSAN_OPTIONS="suppressions=$2$rest"
}
