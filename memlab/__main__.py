import sys

from memlab.app.cli import main

sys.exit(main())
