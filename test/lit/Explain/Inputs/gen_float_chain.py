"""Prints a .qir graph of N float ops in a chain (Relu, Sigmoid, ...)."""
import sys

n = int(sys.argv[1])
print("graph @chain(%v0: tensor<4xf32>) -> (tensor<4xf32>) {")
for i in range(n):
    op = "Relu" if i % 2 == 0 else "Sigmoid"
    print(f'  %v{i + 1} = onnx.{op}(%v{i}) : tensor<4xf32> loc("n{i}")')
print(f"  return %v{n}")
print("}")
