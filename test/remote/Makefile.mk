# Remote devices: tests through libmpigpu-vcl.so and mpigpu-proxy.
