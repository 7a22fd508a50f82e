module github.com/north-cloud/index-manager

go 1.26.0
