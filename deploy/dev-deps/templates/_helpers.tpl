{{- define "devdeps.labels" -}}
app.kubernetes.io/part-of: quarters-dev-deps
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
