import sys
import time

# A run that is longer than a short budget, then fails as training sometimes does late.
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
time.sleep(seconds)
raise RuntimeError(f"failed after {seconds:g} s of training")
