module quarters.dev/pkg

go 1.26.0

require go.yaml.in/yaml/v3 v3.0.6
