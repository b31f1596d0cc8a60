# A shim whose exec returns at once, in memory: through the bridge it
# measures the hop alone (resident, protocol, shim bridge), with no SDK
# and no engine in the way. resident-bench writes it to a temporary file.
import re
import uuid


class _Done:
    stdout = ()
    stderr = ()

    def wait(self):
        return 0


class NullShim:
    secret_env_prefixes = ()
    token_scrub_regex = re.compile(r"nullshim-[0-9a-f]{32}")

    def __init__(self):
        self.boxes = {}

    def import_and_patch(self):
        pass

    def apply_auth(self, creds):
        pass

    def install_unauth_hook(self, on_expired):
        pass

    def create_sandbox(self, spec, install_id, tags=None):
        sid = "null-" + uuid.uuid4().hex[:12]
        self.boxes[sid] = install_id
        return sid

    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        return _Done()

    def list_owned(self, install_id):
        return [{"sandbox_id": s, "state": "running"} for s, o in self.boxes.items() if o == install_id]

    def read_owner(self, sandbox_id):
        return self.boxes.get(sandbox_id)

    def terminate(self, sandbox_id):
        self.boxes.pop(sandbox_id, None)


PROVIDER = NullShim()
