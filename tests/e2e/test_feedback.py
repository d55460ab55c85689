#!/usr/bin/python3
"""test_feedback.py: bounces and complaints that arrive after delivery
(POST /v1/feedback and `fairq feedback`; docs/feedback.md, "Bounces and
complaints that arrive later").

Real fairqd, one fairq-sender and a real SMTP sink deliver a small
campaign. The messages' Message-IDs are taken from what the sink received;
a DSN (RFC 3464: 5.1.1, failed) and an ARF abuse report (RFC 5965), each
written after the RFCs' examples, come back for two of them, raw, one
through the CLI as an MTA's pipe would run it. Then: their events, their
suppressions, and a second campaign refusing both at split; and what must
record nothing: a delay, a 4.x.x failure, a report naming another
recipient, the same report twice, and bodies that are no report at all.
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_e2e  # noqa: E402
from fq_e2e import E2ETest  # noqa: E402

FAIRQD = {"poll_ms": 200, "retry_base_ms": 100, "retry_cap_ms": 200}
PEOPLE = ["bob", "carol", "dave", "erin", "frank"]
RAW = {"Content-Type": "message/rfc822"}


def dsn(message_id, recipient, action="failed", status="5.1.1",
        diagnostic="smtp; 550 5.1.1 <{r}>: Recipient address rejected: User unknown"):
    """A DSN after RFC 3464's example 9.2: a text part, the
    message/delivery-status, the returned headers."""
    diagnostic = diagnostic.format(r=recipient)
    return (
        "From: Mail Delivery Subsystem <MAILER-DAEMON@mx.ok.test>\r\n"
        "To: <bounces@shop.test>\r\n"
        "Subject: Returned mail: see transcript for details\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/report; report-type=delivery-status;\r\n"
        "    boundary=\"JAA13167.773673707/mx.ok.test\"\r\n"
        "\r\n"
        "--JAA13167.773673707/mx.ok.test\r\n"
        "content-type: text/plain; charset=us-ascii\r\n"
        "\r\n"
        f"   ----- The following addresses had delivery problems -----\r\n<{recipient}>\r\n"
        "\r\n"
        "--JAA13167.773673707/mx.ok.test\r\n"
        "content-type: message/delivery-status\r\n"
        "\r\n"
        "Reporting-MTA: dns; mx.ok.test\r\n"
        "\r\n"
        f"Original-Recipient: rfc822;{recipient}\r\n"
        f"Final-Recipient: rfc822;{recipient}\r\n"
        f"Action: {action}\r\n"
        f"Status: {status}\r\n"
        f"Diagnostic-Code: {diagnostic}\r\n"
        "Remote-MTA: dns; mx.ok.test\r\n"
        "\r\n"
        "--JAA13167.773673707/mx.ok.test\r\n"
        "content-type: text/rfc822-headers\r\n"
        "\r\n"
        "From: news@shop.test\r\n"
        f"To: {recipient}\r\n"
        "Subject: Hello\r\n"
        f"Message-ID: {message_id}\r\n"
        "\r\n"
        "--JAA13167.773673707/mx.ok.test--\r\n").encode()


def arf(message_id, recipient, feedback_type="abuse"):
    """An ARF report after RFC 5965's appendix B.2, the whole message
    returned."""
    return (
        "From: <abusedesk@ok.test>\r\n"
        "Date: Thu, 8 Mar 2005 17:40:36 EDT\r\n"
        "Subject: FW: Hello\r\n"
        "To: <abuse@shop.test>\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/report; report-type=feedback-report;\r\n"
        "     boundary=\"part1_13d.2e68ed54_boundary\"\r\n"
        "\r\n"
        "--part1_13d.2e68ed54_boundary\r\n"
        "Content-Type: text/plain; charset=\"US-ASCII\"\r\n"
        "Content-Transfer-Encoding: 7bit\r\n"
        "\r\n"
        "This is an email abuse report for an email message received from IP\r\n"
        "192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.\r\n"
        "\r\n"
        "--part1_13d.2e68ed54_boundary\r\n"
        "Content-Type: message/feedback-report\r\n"
        "\r\n"
        f"Feedback-Type: {feedback_type}\r\n"
        "User-Agent: SomeGenerator/1.0\r\n"
        "Version: 1\r\n"
        "Original-Mail-From: <news@shop.test>\r\n"
        f"Original-Rcpt-To: <{recipient}>\r\n"
        "Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT\r\n"
        "Reporting-MTA: dns; mail.ok.test\r\n"
        "Source-IP: 192.0.2.1\r\n"
        "\r\n"
        "--part1_13d.2e68ed54_boundary\r\n"
        "Content-Type: message/rfc822\r\n"
        "Content-Disposition: inline\r\n"
        "\r\n"
        "From: <news@shop.test>\r\n"
        f"To: <{recipient}>\r\n"
        "Subject: Hello\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-type: text/plain\r\n"
        f"Message-ID: {message_id}\r\n"
        "\r\n"
        "Dear reader\r\n"
        "--part1_13d.2e68ed54_boundary--\r\n").encode()


class FeedbackTest(E2ETest):

    def test_reports_matched_and_suppressed(self):
        h = self.h
        sink = h.start_sink()
        h.start_fairqd(**FAIRQD)
        h.wait_schema()
        h.create_tenant("shop")
        h.start_sender("s1", sink, 4)
        rid = h.submit("shop", [{"to": f"{p}@ok.test", "fields": {"name": p, "n": i}}
                                for i, p in enumerate(PEOPLE)])
        h.wait_request(rid, "done", 60)
        ids = {r["to"][0].split("@")[0]: r["message_id"] for r in sink.records()}
        self.assertEqual(set(ids), set(PEOPLE), "every message delivered with its Message-ID")
        message = {p: fq_e2e.message_id_of({"message_id": ids[p]}) for p in PEOPLE}
        token = h.make_token()

        def post(raw, headers=RAW):
            return h.http("POST", "/v1/feedback", token=token, raw=raw, headers=headers)

        # A hard bounce for bob: recorded, suppressed (5.1.1 is one of
        # suppress_bounces' codes)
        status, _, answer = post(dsn(ids["bob"], "bob@ok.test"))
        self.assertEqual(status, 200, answer)
        self.assertEqual((answer["kind"], answer["recorded"]), ("dsn", 1), answer)
        result = answer["results"][0]
        self.assertEqual((result["outcome"], result["event"], result["suppressed"],
                          result["message"], result["tenant"]),
                         ("recorded", "message.bounced", True, message["bob"], "shop"))
        # The same report again: nothing more
        status, _, answer = post(dsn(ids["bob"], "bob@ok.test"))
        self.assertEqual((status, answer["recorded"], answer["duplicates"]), (200, 0, 1), answer)

        # An abuse report for carol, through the CLI as a pipe runs it
        cli = os.environ.get("FAIRQ_CLI")
        report = arf(ids["carol"], "carol@ok.test")
        if cli:
            run = subprocess.run([cli, "--url", h.http_url, "--token", token, "feedback"],
                                 input=report, capture_output=True, timeout=30)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn(b"1 recorded", run.stdout)
            self.assertIn(b"address suppressed", run.stdout)
        else:
            self.note("FAIRQ_CLI not set: the ARF report posted over HTTP")
            self.assertEqual(post(report)[2]["recorded"], 1)

        # A delay, and a failure with a 4.x.x status: nothing for dave
        status, _, answer = post(dsn(ids["dave"], "dave@ok.test", action="delayed",
                                     status="4.4.7"))
        self.assertEqual((status, answer["ignored"], answer["recorded"]), (200, 1, 0), answer)
        status, _, answer = post(dsn(ids["dave"], "dave@ok.test", status="4.4.7",
                                     diagnostic="smtp; 451 4.4.7 delivery time expired"))
        self.assertEqual((status, answer["ignored"], answer["recorded"]), (200, 1, 0), answer)
        # Erin's Message-ID with another recipient: not matched
        status, _, answer = post(arf(ids["erin"], "mallory@ok.test"))
        self.assertEqual((status, answer["unmatched"]), (200, 1), answer)
        self.assertEqual(answer["results"][0]["reason"], "the message went to another recipient")
        # The JSON form: frank complained
        status, _, answer = h.http("POST", "/v1/feedback", token=token, body=[
            {"type": "complaint", "message_id": ids["frank"], "recipient": "Frank@OK.test",
             "detail": "abuse"}])
        self.assertEqual((status, answer["recorded"]), (200, 1), answer)

        # Bodies that are no report: 400 naming what is wrong, and fairqd
        # goes on
        for raw, headers, words in [
                (b"From: a@b\r\nSubject: hi\r\n\r\nhello\r\n", RAW, "not multipart/report"),
                (os.urandom(4096), RAW, "not a report"),
                (b"", RAW, "empty"),
                (b"{\"type\": \"bounce\"", {"Content-Type": "application/json"}, "not JSON"),
                (b"[{\"type\": \"bounce\", \"message_id\": \"<fairq.1@x>\"}]",
                 {"Content-Type": "application/json"}, "recipient are required"),
                (b"x", {"Content-Type": "image/png"}, "Content-Type must be")]:
            status, _, answer = post(raw, headers)
            self.assertEqual(status, 400, (raw[:40], answer))
            self.assertIn(words, answer["detail"])
        status, _, answer = post(b"x" * (4 * 1024 * 1024 + 1))
        self.assertEqual(status, 413, answer)
        # A tenant's token may not post reports
        status, _, _ = h.http("POST", "/v1/feedback", token=h.make_token("shop"),
                              raw=dsn(ids["erin"], "erin@ok.test"), headers=RAW)
        self.assertEqual(status, 403)
        h.check_alive()

        # The events, as the tenant reads them
        shop = h.make_token("shop")
        status, _, page = h.http("GET", "/v1/events?type=message.bounced", token=shop)
        self.assertEqual([(e["message"], e["recipient"]) for e in page["events"]],
                         [(message["bob"], "bob@ok.test")])
        self.assertIn("5.1.1", page["events"][0]["detail"])
        status, _, page = h.http("GET", "/v1/events?type=message.complained", token=shop)
        self.assertEqual(sorted((e["message"], e["recipient"]) for e in page["events"]),
                         sorted([(message["carol"], "carol@ok.test"),
                                 (message["frank"], "frank@ok.test")]))
        self.assertEqual(h.sql("SELECT address, reason FROM fairq.suppressions ORDER BY address"),
                         [["bob@ok.test", "bounce"], ["carol@ok.test", "complaint"],
                          ["frank@ok.test", "complaint"]])

        # The next campaign refuses the suppressed at split
        again = h.submit("shop", [{"to": f"{p}@ok.test", "fields": {"name": p, "n": i}}
                                  for i, p in enumerate(["bob", "carol", "dave"])])
        h.wait_request(again, "done", 60)
        self.assertEqual(sorted(r[0] for r in h.sql(
            f"SELECT recipient FROM fairq.events WHERE request_id = {again}"
            " AND type = 'message.suppressed'")), ["bob@ok.test", "carol@ok.test"])
        self.assertEqual([r[0] for r in h.sql(
            f"SELECT recipient FROM fairq.messages WHERE request_id = {again}")],
            ["dave@ok.test"])
        h.check_alive()


if __name__ == "__main__":
    fq_e2e.main()
