import os
import time

pid = os.fork()
if pid == 0:
    time.sleep(600)
    os._exit(0)
print("parent forked", pid)
raise RuntimeError("the parent failed while its child lingers")
