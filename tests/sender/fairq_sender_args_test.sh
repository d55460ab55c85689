#!/usr/bin/env bash
# fairq_sender_args_test.sh — fairq-sender refuses bad command lines, CURVE
# material that cannot work among them, with a clear message and exit code 2
# before it connects anywhere, and --help and --make-cert work. Usage: fairq_sender_args_test.sh PATH-TO-fairq-sender
set -u
SENDER=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

# expect CODE TEXT ARGS...: the run exits CODE and its stderr holds TEXT.
expect() {
    local code=$1 text=$2
    shift 2
    local got
    timeout 10 "$SENDER" "$@" >"$WORK/out" 2>"$WORK/err"
    got=$?
    if [[ $got -ne $code ]] || ! grep -qF -- "$text" "$WORK/err" "$WORK/out"; then
        echo "FAIL: fairq-sender $* -> exit $got (wanted $code and \"$text\")"
        sed 's/^/    /' "$WORK/err"
        failures=$((failures + 1))
    else
        echo "ok: fairq-sender $* -> $got: $(head -1 "$WORK/err")"
    fi
}

C=(--connect tcp://127.0.0.1:1)
expect 2 "--connect tcp://HOST:PORT[,tcp://HOST:PORT...] is required" --insecure --transport null
expect 2 'invalid value for --connect: endpoint "http://x:1" is not tcp://HOST:PORT' \
    --connect http://x:1 --insecure
# A list of several fairqd: each element is checked, and so is their number
expect 2 'invalid value for --connect: endpoint "udp://b:2" is not tcp://HOST:PORT' \
    --connect tcp://a:1,udp://b:2 --insecure --transport null
expect 2 "invalid value for --connect: endpoint 2 of" --connect tcp://a:1,,tcp://b:2 --insecure \
    --transport null
expect 2 "invalid value for --connect: endpoint 2 of" --connect tcp://a:1, --insecure \
    --transport null
many=$(printf 'tcp://h:%d,' $(seq 1 17))
expect 2 "invalid value for --connect: more than 16 endpoints" --connect "${many%,}" --insecure \
    --transport null
expect 2 "invalid value for --concurrency" "${C[@]}" --insecure --transport null --concurrency 0
expect 2 "invalid value for --concurrency" "${C[@]}" --insecure --transport null --concurrency abc
expect 2 "invalid value for --concurrency" "${C[@]}" --insecure --transport null --concurrency 201
expect 2 "invalid value for --heartbeat-ms" "${C[@]}" --insecure --transport null --heartbeat-ms 5
expect 2 "invalid value for --log-level" "${C[@]}" --insecure --transport null --log-level loud
expect 2 "invalid --name" "${C[@]}" --insecure --transport null --name "a b/c"
expect 2 "unknown transport kind" "${C[@]}" --insecure --transport carrier-pigeon
expect 2 "smtp" "${C[@]}" --insecure --transport smtp --smtp-url http://relay:25
expect 2 "path" "${C[@]}" --insecure --transport file
expect 2 "unexpected argument" "${C[@]}" --insecure --transport null stray
expect 2 "for more information" "${C[@]}" --no-such-option
expect 2 "CURVE needs --cert and --server-cert" "${C[@]}" --transport null
expect 2 "could not read a public key" "${C[@]}" --transport null --cert "$WORK/none" \
    --server-cert "$WORK/none"
# CURVE material that cannot work is refused before anything is started
# (a sender that started would knock at fairqd's door for ever): a --cert
# that is not there, one without its _secret file, a server key that is
# not 40 characters of Z85
"$SENDER" --make-cert "$WORK/server" >/dev/null
"$SENDER" --make-cert "$WORK/me" >/dev/null
mkdir "$WORK/public"
cp "$WORK/me" "$WORK/public/me"
S=(--server-cert "$WORK/server")
expect 2 "could not load the CURVE certificate $WORK/none" "${C[@]}" --transport null \
    --cert "$WORK/none" "${S[@]}"
expect 2 "invalid CURVE configuration (--cert, --server-cert, --server-key)" "${C[@]}" \
    --transport null --cert "$WORK/none" "${S[@]}"
expect 2 "the CURVE certificate has no secret key (its _secret file is missing)" "${C[@]}" \
    --transport null --cert "$WORK/public/me" "${S[@]}"
expect 2 "invalid value for --server-key: not a CURVE public key" "${C[@]}" --transport null \
    --cert "$WORK/me" --server-key abc
expect 2 "invalid value for --server-key: not a CURVE public key" "${C[@]}" --transport null \
    --cert "$WORK/me" --server-key "$(printf '%40s' '')"
sed 's/public-key = "./public-key = " /' "$WORK/server" >"$WORK/server.bad"
expect 2 "could not read a public key from --server-cert" "${C[@]}" --transport null \
    --cert "$WORK/me" --server-cert "$WORK/server.bad"
expect 2 "could not read a public key from --server-cert" "${C[@]}" --transport null \
    --cert "$WORK/me" --server-cert "$WORK"
# An option from the environment is checked like a flag
FAIRQ_SENDER_CONCURRENCY=-3 expect 2 "invalid value for --concurrency" "${C[@]}" --insecure \
    --transport null
expect 0 "Usage:" --help
expect 0 "one --server-cert or --server-key serves" --help
expect 0 "wrote" --make-cert "$WORK/cert"
if [[ ! -s "$WORK/cert" || ! -s "$WORK/cert_secret" ]] || grep -q secret-key "$WORK/cert"; then
    echo "FAIL: --make-cert did not write a public certificate and its secret apart"
    failures=$((failures + 1))
fi
if [[ $failures -ne 0 ]]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all passed"
