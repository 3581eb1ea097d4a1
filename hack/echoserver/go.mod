module tether.dev/hack/echoserver

go 1.26.0
