{{/* The chart's name. */}}
{{- define "quarters.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release-scoped name prefix of every object. */}}
{{- define "quarters.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "quarters.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "quarters.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "quarters.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "quarters.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: quarters
{{- end -}}

{{/* The selector of one service's pods; argument: dict root, name. */}}
{{- define "quarters.selector" -}}
app.kubernetes.io/name: {{ include "quarters.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* The name of one service's objects; argument: dict root, name. */}}
{{- define "quarters.svcname" -}}
{{- printf "%s-%s" (include "quarters.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Secret the chart creates for the values it is given. */}}
{{- define "quarters.secretname" -}}
{{- include "quarters.fullname" . -}}
{{- end -}}

{{/*
A secret environment variable; argument: dict root, env (variable name),
conf (a block with value/url/uri and existingSecret).
*/}}
{{- define "quarters.secretenv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      {{- if .conf.existingSecret.name }}
      name: {{ .conf.existingSecret.name }}
      {{- else }}
      name: {{ include "quarters.secretname" .root }}
      {{- end }}
      key: {{ .conf.existingSecret.key }}
{{- end -}}

{{/* The admin token to store: the given one, the one stored by an earlier release, or a new random one. */}}
{{- define "quarters.adminToken" -}}
{{- if .Values.adminToken.value -}}
{{- .Values.adminToken.value -}}
{{- else -}}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "quarters.secretname" .) -}}
{{- if and $old (index ($old.data | default dict) .Values.adminToken.existingSecret.key) -}}
{{- index $old.data .Values.adminToken.existingSecret.key | b64dec -}}
{{- else -}}
{{- randAlphaNum 48 -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Whether the chart creates its Secret (some value is not taken from an existing one). */}}
{{- define "quarters.createsSecret" -}}
{{- $v := .Values -}}
{{- if or (not $v.mongo.existingSecret.name) (not $v.redis.existingSecret.name) (not $v.smtp.existingSecret.name) (not $v.adminToken.existingSecret.name) -}}
true
{{- end -}}
{{- end -}}

{{/*
One service: Deployment, Service, ServiceAccount, HorizontalPodAutoscaler and
PodDisruptionBudget. Argument: dict root, name, svc (its values block).
*/}}
{{- define "quarters.service" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $svc := .svc -}}
{{- $fullname := include "quarters.svcname" . -}}
{{- $g := $root.Values.global -}}
{{- $repo := $svc.image.repository | default (printf "%s/%s" $root.Values.image.registry $name) -}}
{{- $tag := $svc.image.tag | default $root.Values.image.tag | default $root.Chart.AppVersion -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
automountServiceAccountToken: false
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  type: ClusterIP
  selector:
    {{- include "quarters.selector" . | nindent 4 }}
  ports:
    - name: http
      port: 8080
      targetPort: http
      protocol: TCP
    - name: ops
      port: 9090
      targetPort: ops
      protocol: TCP
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  {{- if not $svc.autoscaling.enabled }}
  replicas: {{ $svc.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "quarters.selector" . | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
  template:
    metadata:
      labels:
        {{- include "quarters.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ $name }}
      annotations:
        checksum/config: {{ pick $root.Values "global" "mongo" "redis" "smtp" "adminToken" | toJson | sha256sum }}
    spec:
      serviceAccountName: {{ $fullname }}
      automountServiceAccountToken: false
      # Service links would add QUARTERS_<NAME>_PORT-style variables for
      # every Service of a release named quarters.
      enableServiceLinks: false
      {{- with $root.Values.image.pullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      terminationGracePeriodSeconds: {{ add $g.shutdownTimeoutSeconds $g.preStopSeconds 10 }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "quarters.selector" . | nindent 14 }}
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "quarters.selector" . | nindent 14 }}
      containers:
        - name: {{ $name }}
          image: {{ printf "%s:%s" $repo $tag | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
            - name: ops
              containerPort: 9090
              protocol: TCP
          env:
            - name: QUARTERS_HTTP_ADDR
              value: ":8080"
            - name: QUARTERS_OPS_ADDR
              value: ":9090"
            - name: QUARTERS_LOG_LEVEL
              value: {{ $g.logLevel | quote }}
            - name: QUARTERS_SHUTDOWN_TIMEOUT
              value: {{ printf "%ds" (int $g.shutdownTimeoutSeconds) | quote }}
            - name: QUARTERS_KAFKA_BROKERS
              value: {{ $g.kafka.brokers | quote }}
            - name: QUARTERS_KAFKA_TOPIC_PREFIX
              value: {{ $g.kafka.topicPrefix | quote }}
            {{- with $g.otlpEndpoint }}
            - name: QUARTERS_OTLP_ENDPOINT
              value: {{ . | quote }}
            {{- end }}
            {{- include "quarters.secretenv" (dict "root" $root "env" "QUARTERS_MONGO_URI" "conf" $root.Values.mongo) | nindent 12 }}
            {{- include "quarters.secretenv" (dict "root" $root "env" "QUARTERS_REDIS_URL" "conf" $root.Values.redis) | nindent 12 }}
            {{- include "quarters.secretenv" (dict "root" $root "env" "QUARTERS_ADMIN_TOKEN" "conf" $root.Values.adminToken) | nindent 12 }}
            {{- if eq $name "bookings" }}
            {{- include "quarters.secretenv" (dict "root" $root "env" "QUARTERS_SMTP_URL" "conf" $root.Values.smtp) | nindent 12 }}
            - name: QUARTERS_DASHBOARD_URL
              value: {{ $root.Values.dashboardUrl | quote }}
            {{- end }}
            {{- range $k, $v := $svc.env }}
            - name: {{ $k }}
              value: {{ $v | toString | quote }}
            {{- end }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: ops
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /readyz
              port: ops
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          startupProbe:
            httpGet:
              path: /healthz
              port: ops
            periodSeconds: 2
            failureThreshold: 30
          lifecycle:
            preStop:
              sleep:
                seconds: {{ $g.preStopSeconds }}
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            runAsGroup: 65532
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            capabilities:
              drop: [ALL]
            seccompProfile:
              type: RuntimeDefault
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
{{- if $svc.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $fullname }}
  minReplicas: {{ $svc.autoscaling.minReplicas }}
  maxReplicas: {{ $svc.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $svc.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  maxUnavailable: {{ $svc.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "quarters.selector" . | nindent 6 }}
{{- end -}}

{{/*
An Ingress for the routes of routes.yaml under a prefix, deepest first (the
order in which ingress-nginx must see regex paths). Argument: dict root,
name (object name suffix), conf (ingress values), prefix.
*/}}
{{- define "quarters.ingress" -}}
{{- $root := .root -}}
{{- $conf := .conf -}}
{{- $prefix := .prefix -}}
{{- $table := $root.Files.Get "routes.yaml" | fromYaml -}}
{{- $routes := list -}}
{{- range $table.routes -}}
{{- if and (not .devOnly) (hasPrefix $prefix .path) (index $root.Values.services .service | default dict).enabled -}}
{{- $routes = append $routes . -}}
{{- end -}}
{{- end -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ printf "%s-%s" (include "quarters.fullname" $root) .name | trunc 63 | trimSuffix "-" }}
  labels:
    {{- include "quarters.labels" $root | nindent 4 }}
  annotations:
    nginx.ingress.kubernetes.io/use-regex: "true"
    {{- with $conf.annotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  ingressClassName: {{ $conf.className }}
  {{- if $conf.tls.enabled }}
  tls:
    - secretName: {{ $conf.tls.secretName }}
      {{- with $conf.host }}
      hosts: [{{ . | quote }}]
      {{- end }}
  {{- end }}
  rules:
    {{- if $conf.host }}
    - host: {{ $conf.host | quote }}
      http:
    {{- else }}
    - http:
    {{- end }}
        paths:
          {{- range $depth := untilStep 16 0 -1 }}
          {{- range $routes }}
          {{- if eq (len (compact (splitList "/" .path))) $depth }}
          - path: {{ printf "^%s(/.*)?$" (replace "{id}" "[^/]+" .path) | quote }}
            pathType: ImplementationSpecific
            backend:
              service:
                name: {{ include "quarters.svcname" (dict "root" $root "name" .service) }}
                port:
                  name: http
          {{- end }}
          {{- end }}
          {{- end }}
{{- end -}}
