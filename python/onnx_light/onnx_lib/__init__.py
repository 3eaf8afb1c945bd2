"""ONNX helpers implemented by onnx_light's own C++ library (``parser``)."""
