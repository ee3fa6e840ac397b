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

    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2", "for i in range(3):"]
    invalid_code_samples = ["import = 7q", "for x in range(10) x*2"]

    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1+2*"


if __name__ == "__main__":
    unittest.main()
