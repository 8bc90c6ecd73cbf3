"""A webhook receiver: verifies each delivery with the Standard Webhooks
library and prints its id and type. The README's example; CI runs it
(clients/python/flow.py).

    pip install standardwebhooks
    python3 examples/webhook_receiver.py <whsec_... secret> [port, default 8000]
"""

import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

hook = Webhook(sys.argv[1])  # the secret the create answered


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            event = hook.verify(body, dict(self.headers))  # signature and timestamp
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        # A retry carries the same webhook-id: a receiver drops one it has seen.
        print(self.headers["webhook-id"], event["type"], flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 8000), Receiver).serve_forever()
