#!/usr/bin/env bash
# fairq_sender_args_test.sh — fairq-sender refuses bad command lines, CURVE
# material that cannot work among them, with a clear message and exit code 2
# before it connects anywhere, and --help, --version and --make-cert work.
# Its configuration (the engine fairqd's is read by, config/fq_config.h): a
# config file (--config or FAIRQ_SENDER_CONFIG) under the environment under
# the flags, --print-config with smtp_password masked, an unknown key with
# its suggestion, a bad value with its file and line, --connect required
# from some source. Usage: fairq_sender_args_test.sh PATH-TO-fairq-sender
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

# expect_out TEXT: the last run's stdout holds the line TEXT, whole.
expect_out() {
    if ! grep -qxF -- "$1" "$WORK/out"; then
        echo "FAIL: stdout lacks the line \"$1\""
        sed 's/^/    /' "$WORK/out"
        failures=$((failures + 1))
    fi
}

# expect_nowhere TEXT: the last run wrote TEXT on neither stdout nor stderr.
expect_nowhere() {
    if grep -qF -- "$1" "$WORK/out" "$WORK/err"; then
        echo "FAIL: the output shows \"$1\""
        failures=$((failures + 1))
    fi
}

C=(--connect tcp://127.0.0.1:1)
expect 2 "fairq-sender: --connect tcp://HOST:PORT[,tcp://HOST:PORT...] is required (or connect in \
the config file, or FAIRQ_SENDER_CONNECT)" --insecure --transport null
expect 2 'flag --connect: invalid value for "connect": endpoint "http://x:1" is not tcp://HOST:PORT' \
    --connect http://x:1 --insecure
# A list of several fairqd: each element is checked, and so is their number
expect 2 'invalid value for "connect": endpoint "udp://b:2" is not tcp://HOST:PORT' \
    --connect tcp://a:1,udp://b:2 --insecure --transport null
expect 2 'invalid value for "connect": endpoint 2 of' --connect tcp://a:1,,tcp://b:2 --insecure \
    --transport null
expect 2 'invalid value for "connect": endpoint 2 of' --connect tcp://a:1, --insecure \
    --transport null
many=$(printf 'tcp://h:%d,' $(seq 1 17))
expect 2 'invalid value for "connect": more than 16 endpoints' --connect "${many%,}" --insecure \
    --transport null
# A relay's limit that does not read: refused at start, never said to fairqd
expect 2 'flag --max-rate: invalid value for "max_rate": rate "14/x": unknown unit "x"' \
    "${C[@]}" --insecure --transport null --max-rate 14/x
expect 2 'invalid value for "max_rate": rate "0/s"' \
    "${C[@]}" --insecure --transport null --max-rate 0/s
expect 2 'flag --concurrency: invalid value for "concurrency": 0 is out of range (1..200)' \
    "${C[@]}" --insecure --transport null --concurrency 0
expect 2 'flag --concurrency: invalid value for "concurrency": "abc" is not an integer' \
    "${C[@]}" --insecure --transport null --concurrency abc
expect 2 'invalid value for "concurrency": 201 is out of range (1..200)' "${C[@]}" --insecure \
    --transport null --concurrency 201
expect 2 'flag --heartbeat-ms: invalid value for "heartbeat_ms": 5 is out of range' "${C[@]}" \
    --insecure --transport null --heartbeat-ms 5
expect 2 'invalid value for "log_level": "loud" is not one of debug|info|warning|error' \
    "${C[@]}" --insecure --transport null --log-level loud
expect 2 'flag --name: invalid value for "name": "a b/c" is not a valid system name' "${C[@]}" \
    --insecure --transport null --name "a b/c"
expect 2 'invalid value for "transport": "carrier-pigeon" is not one of smtp|file|null|exec' \
    "${C[@]}" --insecure --transport carrier-pigeon
expect 2 "smtp" "${C[@]}" --insecure --transport smtp --smtp-url http://relay:25
expect 2 "path" "${C[@]}" --insecure --transport file
expect 2 'argument "stray": unexpected' "${C[@]}" --insecure --transport null stray
expect 2 "for more information" "${C[@]}" --no-such-option
expect 2 'flag --smtp-ulr: unknown key "smtp-ulr" (did you mean "smtp_url"?)' "${C[@]}" \
    --smtp-ulr smtp://relay:25
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
# Channels: names checked, each channel's transport probed before anything
# starts (exit 2, naming the channel), the HELLO's room for them respected
expect 2 'flag --channels: invalid value for "channels": "Bad" is not a channel name' "${C[@]}" \
    --insecure --transport null --channels email,Bad
expect 2 'invalid value for "channels": channel "email" is given twice' "${C[@]}" --insecure \
    --transport null --channels "email, email"
expect 2 'invalid value for "channels": an empty channel name' "${C[@]}" --insecure \
    --transport null --channels email,
expect 2 'channel "sms" is served by exec_command, which is not set' "${C[@]}" --insecure \
    --transport null --channels email,sms
expect 2 "flag --transport: transport exec (the email channel's) needs exec_command, which is not \
set" "${C[@]}" --insecure --transport exec
expect 2 'channel sms: exec command "run-sms --fast" does not start with an absolute program path' \
    "${C[@]}" --insecure --channels http,sms --exec-command "run-sms --fast"
expect 2 "channel email: exec command: cannot run $WORK/none" "${C[@]}" --insecure \
    --transport exec --exec-command "$WORK/none"
expect 2 "channel http: could not read the CA file $WORK/none" "${C[@]}" --insecure \
    --channels http --http-ca-file "$WORK/none"
long=$(for c in a b c d e f g h; do printf "$c%.0s" $(seq 32); printf ,; done)
expect 2 "too many channels or names too long for HELLO's capabilities" "${C[@]}" --insecure \
    --channels "${long%,}" --exec-command /bin/cat
expect 2 'invalid value for "transport": "pigeon" is not one of smtp|file|null|exec' "${C[@]}" \
    --insecure --transport pigeon
expect 2 'flag --http-timeout-ms: invalid value for "http_timeout_ms": 0 is out of range' \
    "${C[@]}" --insecure --channels http --http-timeout-ms 0
# Each channel's pool (channel_concurrency): NAME:N of channels served, 1..200
CC=("${C[@]}" --insecure --transport null --channels email,http)
expect 2 "flag --channel-concurrency: invalid value for \"channel_concurrency\": \"sms\" is not a \
channel this sender serves (channels: email, http)" "${CC[@]}" --channel-concurrency sms:4
expect 2 'invalid value for "channel_concurrency": http: 0 is out of range (1..200)' "${CC[@]}" \
    --channel-concurrency http:0
expect 2 'invalid value for "channel_concurrency": http: 201 is out of range (1..200)' "${CC[@]}" \
    --channel-concurrency email:2,http:201
expect 2 'invalid value for "channel_concurrency": "http" is not NAME:N' "${CC[@]}" \
    --channel-concurrency http
expect 2 'invalid value for "channel_concurrency": http: "many" is not an integer' "${CC[@]}" \
    --channel-concurrency http:many
expect 2 'invalid value for "channel_concurrency": an empty item (want NAME:N, ...)' "${CC[@]}" \
    --channel-concurrency http:4,
expect 2 'invalid value for "channel_concurrency": channel "http" is given twice' "${CC[@]}" \
    --channel-concurrency "http:4, http:5"
printf 'connect = tcp://127.0.0.1:1\ninsecure = true\ntransport = null\n%s\n' \
    'channel_concurrency = email:x' >"$WORK/pools.conf"
expect 2 "config $WORK/pools.conf:4: invalid value for \"channel_concurrency\": email: \"x\" is not \
an integer" --config "$WORK/pools.conf"
FAIRQ_SENDER_CHANNEL_CONCURRENCY=http:3 expect 2 "environment FAIRQ_SENDER_CHANNEL_CONCURRENCY: \
invalid value for \"channel_concurrency\": \"http\" is not a channel this sender serves (channels: \
email)" --config "$WORK/pools.conf"
expect 0 "channel_concurrency" "${CC[@]}" --print-config --channel-concurrency " http : 200 "
expect_out 'channel_concurrency = " http : 200 "  # flag --channel-concurrency'
expect 0 "channel_concurrency" "${CC[@]}" --print-config
expect_out 'channel_concurrency = ""  # default'
# Started: each pool's size in the log, their sum the concurrency
"$SENDER" "${CC[@]}" --concurrency 3 --channel-concurrency http:5 >"$WORK/out" 2>"$WORK/err" &
started=$!
for _ in $(seq 200); do
    grep -q " started: " "$WORK/out" && break
    sleep 0.05
done
kill -TERM $started
wait $started
got=$?
if [[ $got -ne 0 ]] ||
    ! grep -qF 'serving email (null, 3 workers), http (http, 5 workers), concurrency 8,' \
        "$WORK/out"; then
    echo "FAIL: a sender of pools email 3 and http 5 -> exit $got, log:"
    sed 's/^/    /' "$WORK/out" "$WORK/err"
    failures=$((failures + 1))
else
    echo "ok: a sender of pools email 3 and http 5 says so and stops on SIGTERM"
fi
expect 0 "channels" "${C[@]}" --print-config --channels " email , http " --exec-command "/bin/cat -"
expect_out 'channels = " email , http "  # flag --channels'
expect_out 'exec_command = "/bin/cat -"  # flag --exec-command'
expect_out 'http_insecure_tls = false  # default'
# An option from the environment is checked like a flag
FAIRQ_SENDER_CONCURRENCY=-3 expect 2 \
    'environment FAIRQ_SENDER_CONCURRENCY: invalid value for "concurrency": -3 is out of range' \
    "${C[@]}" --insecure --transport null
expect 0 "usage: fairq-sender --connect" --help
expect 0 "one --server-cert or --server-key serves" --help
expect 0 "  --channel-concurrency=TEXT  (FAIRQ_SENDER_CHANNEL_CONCURRENCY, default \"\")" --help
expect 0 "its idle workers apart" --help
# Every option shows its value's placeholder, dashed; --version is listed
expect 0 "  --connect=TEXT  (FAIRQ_SENDER_CONNECT" --help
expect 0 "  --smtp-url=TEXT  (FAIRQ_SENDER_SMTP_URL" --help
expect 0 "  --insecure=true|false  (FAIRQ_SENDER_INSECURE, default false)" --help
expect 0 "fairq-sender --make-cert PATH" --help
expect 0 "fairq-sender --version" --help
# --version: the project's version, from CMakeLists.txt's project()
expect 0 "fairq-sender " --version
expect_out "fairq-sender $(sed -n 's/^project(fairq VERSION \([0-9.]*\).*/\1/p' \
    "$(dirname "$0")/../../CMakeLists.txt")"
expect 0 "wrote" --make-cert "$WORK/cert"

# The config file: key = value lines, under the environment, under flags
cat >"$WORK/sender.conf" <<'CONF'
# a sender's configuration
connect = tcp://127.0.0.1:1
concurrency = 3
smtp_password = "hunter2 # not a comment"
name = from-file
transport = null
insecure = true
heartbeat_ms = 500
CONF
FAIRQ_SENDER_CONCURRENCY=5 FAIRQ_SENDER_HEARTBEAT_MS=600 expect 0 "# fairq-sender configuration" \
    --config "$WORK/sender.conf" --print-config --name from-flag --heartbeat-ms=700
expect_out "connect = \"tcp://127.0.0.1:1\"  # config $WORK/sender.conf:2"
expect_out "concurrency = 5  # environment FAIRQ_SENDER_CONCURRENCY"
expect_out "name = \"from-flag\"  # flag --name"
expect_out "heartbeat_ms = 700  # flag --heartbeat-ms"
expect_out "transport = null  # config $WORK/sender.conf:6"
expect_out "smtp_password = \"********\"  # config $WORK/sender.conf:4"
expect_out "drain_timeout_ms = 10000  # default"
expect_nowhere "hunter2"
# A password from the environment or a flag is masked as well
FAIRQ_SENDER_SMTP_PASSWORD=env-secret expect 0 "smtp_password" --config "$WORK/sender.conf" \
    --print-config
expect_out "smtp_password = \"********\"  # environment FAIRQ_SENDER_SMTP_PASSWORD"
expect_nowhere "env-secret"
expect 0 "smtp_password" --config "$WORK/sender.conf" --print-config --smtp_password flag-secret
expect_out "smtp_password = \"********\"  # flag --smtp_password"
expect_nowhere "flag-secret"
# FAIRQ_SENDER_CONFIG names the file when --config does not
FAIRQ_SENDER_CONFIG="$WORK/sender.conf" expect 0 "# config file: $WORK/sender.conf" --print-config
expect_out "concurrency = 3  # config $WORK/sender.conf:3"
# The environment variables of before still work: FAIRQ_SENDER_<KEY>
FAIRQ_SENDER_CONNECT=tcp://127.0.0.1:2 FAIRQ_SENDER_INSECURE=yes FAIRQ_SENDER_TRANSPORT=null \
    FAIRQ_SENDER_SMTP_TIMEOUT_MS=5 expect 0 "connect" --print-config
expect_out "connect = \"tcp://127.0.0.1:2\"  # environment FAIRQ_SENDER_CONNECT"
expect_out "smtp_timeout_ms = 5  # environment FAIRQ_SENDER_SMTP_TIMEOUT_MS"
# Errors in the file name the file and the line; a typo gets a suggestion
printf 'connect = tcp://127.0.0.1:1\n\nconcurency = 3\n' >"$WORK/typo.conf"
expect 2 "fairq-sender: config $WORK/typo.conf:3: unknown key \"concurency\" (did you mean \
\"concurrency\"?)" --config "$WORK/typo.conf"
printf 'connect = tcp://127.0.0.1:1\nconcurrency = many\n' >"$WORK/bad.conf"
expect 2 "fairq-sender: config $WORK/bad.conf:2: invalid value for \"concurrency\": \"many\" is \
not an integer" --config "$WORK/bad.conf"
# --connect is required from some source: a file without it is not enough
printf 'transport = null\ninsecure = on\n' >"$WORK/noconnect.conf"
expect 2 "--connect tcp://HOST:PORT[,tcp://HOST:PORT...] is required" --config "$WORK/noconnect.conf"
expect 2 "--connect tcp://HOST:PORT[,tcp://HOST:PORT...] is required" --print-config
expect 2 "config /nonexistent/sender.conf: could not open" --config /nonexistent/sender.conf
# --make-cert stays an action: the settings are not read for it
expect 0 "wrote" --make-cert "$WORK/cert2" --config /nonexistent/sender.conf
expect 2 "flag --make-cert: missing value (PATH)" --make-cert
if [[ ! -s "$WORK/cert" || ! -s "$WORK/cert_secret" ]] || grep -q secret-key "$WORK/cert"; then
    echo "FAIL: --make-cert did not write a public certificate and its secret apart"
    failures=$((failures + 1))
fi
if [[ $failures -ne 0 ]]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all passed"
