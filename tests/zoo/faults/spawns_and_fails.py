import subprocess
import sys

# A helper process the script never waits for, as a launcher or a log shipper would be.
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("started helper", helper.pid, flush=True)
raise RuntimeError("the script failed while its helper runs on")
