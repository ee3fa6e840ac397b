"""The Jupyter community's conformance suite (jupyter_kernel_test) against the
sandpit kernelspec. Every sample attribute that sandpit supports is filled in;
the suite validates each message against the protocol's schemas."""

import unittest

import jupyter_kernel_test


class SandpitKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "sandpit"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"

    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n * n for n in range(1, 4)]", "result": "[1, 4, 9]"},
        {"code": "'sandpit'.upper()", "result": "'SANDPIT'"},
    ]
    code_generate_error = "raise ValueError('an error for the test')"

    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n",
                             "%time x = 1", "f?", "%%time\nx = 1\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2", "for i in range(3):",
                               "x = (", "%%time\nx = 1"]
    invalid_code_samples = ["import = 7q", "for x in range(10) x*2", "x = )"]

    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1+2*"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "import os; os.path.jo", "matches": {"join"}},
        {"text": "%ti", "matches": {"%time", "%%time", "%timeit", "%%timeit"}},
        {"text": "import json.deco", "matches": {"json.decoder"}},
    ]
    code_inspect_sample = "zip"
    code_page_something = "zip?"

    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
         "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
         "mime": "text/latex"},
        {"code": "from sandpit.display import Markdown; display(Markdown('**bold**'))",
         "mime": "text/markdown"},
        {"code": "display({'application/json': {'a': 1}, 'text/plain': \"{'a': 1}\"}, raw=True)",
         "mime": "application/json"},
        {"code": "from sandpit.display import SVG; "
                 "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" "
                 "height=\"4\"/>'))",
         "mime": "image/svg+xml"},
        {"code": "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()",
         "mime": "image/png"},
    ]
    code_clear_output = "from IPython.display import clear_output; clear_output()"


if __name__ == "__main__":
    unittest.main()
