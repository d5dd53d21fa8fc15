module github.com/sluicehq/sluice/hack/tools

go 1.26.0
