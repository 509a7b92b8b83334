# A stand-in for torch with the two files the probe goes by: it counts a
# frame of torch/_dynamo/symbolic_convert.py as Dynamo tracing and this
# package's directory as library code. No real torch needed.
