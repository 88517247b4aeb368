import subprocess
import sys
import time


def make():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    while True:
        time.sleep(0.05)
