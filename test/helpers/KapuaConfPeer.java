// Eclipse Kapua's reading and writing of Kura's CONF-V1 XML, for the tests (test/helpers/kapua-conf.ts):
// the JAXB binding of Kapua's Kura device-call model (KuraDeviceConfiguration,
// KuraDeviceComponentConfiguration, the properties adapter KuraXmlConfigPropertiesAdapter with
// KuraXmlConfigPropertyAdapted, KuraSnapshotIds) and of its OSGi metatype classes (Tocd, Tad,
// Toption, Ticon, Tscalar), re-declared here with the same element and attribute names, namespaces
// and Java types, and unmarshalled by the JAXB reference implementation (Debian's libjaxb-java) as
// Kapua's XmlUtil does: any validation event is fatal. After unmarshalling, what Kapua's translator
// needs is checked the way it fails: a property without a value or a name (Collectors.toMap), an AD
// without a type (getType().value()), a snapshot list without ids.
//
// One request a line on stdin, one answer a line on stdout ("ok <json>" or "err <base64 text>"):
//   conf <base64 xml>         -> {"configurations":[{"pid","definition":{…}|null,"properties":{name:{"class","value"}}}]}
//   snapshots <base64 xml>    -> {"ids":["…"]}
//   put <b64 pid> <b64 name>,<type>,<array>,<b64 value>,… …
//                             -> the XML Kapua's marshaller writes for that configuration (a JSON string)
import java.io.*;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.stream.Collectors;
import javax.xml.bind.*;
import javax.xml.bind.annotation.*;
import javax.xml.bind.annotation.adapters.*;
import javax.xml.namespace.QName;

public class KapuaConfPeer {
  static final String ESF = "http://eurotech.com/esf/2.0";
  static final String OCD = "http://www.osgi.org/xmlns/metatype/v1.2.0";

  // ---- the metatype (Kapua's org.eclipse.kapua.model.config.metatype) --------------------------

  @XmlEnum
  public enum Tscalar {
    @XmlEnumValue("String") STRING, @XmlEnumValue("Long") LONG, @XmlEnumValue("Double") DOUBLE, @XmlEnumValue("Float") FLOAT,
    @XmlEnumValue("Integer") INTEGER, @XmlEnumValue("Byte") BYTE, @XmlEnumValue("Char") CHAR, @XmlEnumValue("Boolean") BOOLEAN,
    @XmlEnumValue("Short") SHORT, @XmlEnumValue("Password") PASSWORD;
    public String value() {
      try { return Tscalar.class.getField(name()).getAnnotation(XmlEnumValue.class).value(); } catch (NoSuchFieldException e) { throw new IllegalStateException(e); }
    }
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  @XmlType(name = "Toption", namespace = OCD)
  public static class Toption {
    @XmlAnyElement(lax = true) public List<Object> any;
    @XmlAttribute(name = "label", required = true) public String label;
    @XmlAttribute(name = "value", required = true) public String value;
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  @XmlType(name = "Tad", namespace = OCD)
  public static class Tad {
    @XmlElement(name = "Option", namespace = OCD) public List<Toption> option;
    @XmlAnyElement(lax = true) public List<Object> any;
    @XmlAttribute(name = "name") public String name;
    @XmlAttribute(name = "description") public String description;
    @XmlAttribute(name = "id", required = true) public String id;
    @XmlAttribute(name = "type", required = true) public Tscalar type;
    @XmlAttribute(name = "cardinality") public Integer cardinality;
    @XmlAttribute(name = "min") public String min;
    @XmlAttribute(name = "max") public String max;
    @XmlAttribute(name = "default") public String defaultValue;
    @XmlAttribute(name = "required") public Boolean required;
    @XmlAnyAttribute public Map<QName, String> otherAttributes;
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  @XmlType(name = "Ticon", namespace = OCD)
  public static class Ticon {
    @XmlAttribute(name = "resource", required = true) public String resource;
    @XmlAttribute(name = "size") public BigInteger size;
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  @XmlType(name = "Tocd", namespace = OCD, propOrder = { "ad", "icon", "any" })
  public static class Tocd {
    @XmlElement(name = "AD", namespace = OCD, required = true) public List<Tad> ad;
    @XmlElement(name = "Icon", namespace = OCD) public List<Ticon> icon;
    @XmlAnyElement(lax = true) public List<Object> any;
    @XmlAttribute(name = "name", required = true) public String name;
    @XmlAttribute(name = "description") public String description;
    @XmlAttribute(name = "id", required = true) public String id;
  }

  // ---- the Kura device-call model (Kapua's org.eclipse.kapua.service.device.call.kura.model.configuration) ----

  @XmlEnum
  public enum ConfigPropertyType {
    @XmlEnumValue("String") stringType, @XmlEnumValue("Long") longType, @XmlEnumValue("Double") doubleType, @XmlEnumValue("Float") floatType,
    @XmlEnumValue("Integer") integerType, @XmlEnumValue("Byte") byteType, @XmlEnumValue("Char") charType, @XmlEnumValue("Boolean") booleanType,
    @XmlEnumValue("Short") shortType, @XmlEnumValue("Password") passwordType
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  public static class KuraXmlConfigPropertyAdapted {
    @XmlAttribute(name = "name") public String name;
    @XmlAttribute(name = "array") public boolean array;
    @XmlAttribute(name = "encrypted") public boolean encrypted;
    @XmlAttribute(name = "type") public ConfigPropertyType type;
    @XmlElement(name = "value", namespace = ESF) public String[] values;
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  public static class KuraXmlConfigPropertiesAdapted {
    @XmlElement(name = "property", namespace = ESF) public KuraXmlConfigPropertyAdapted[] properties;
  }

  /** Kapua's KuraXmlConfigPropertiesAdapter: typed values; a Password is decoded from base64 when encrypted. */
  public static class KuraXmlConfigPropertiesAdapter extends XmlAdapter<KuraXmlConfigPropertiesAdapted, Map<String, Object>> {
    @Override
    public Map<String, Object> unmarshal(KuraXmlConfigPropertiesAdapted adapted) {
      List<Map.Entry<String, Object>> entries = new ArrayList<>();
      for (KuraXmlConfigPropertyAdapted p : adapted.properties == null ? new KuraXmlConfigPropertyAdapted[0] : adapted.properties) {
        if (p.type == null) throw new IllegalStateException("property " + p.name + " without a type");
        Object value = p.array ? arrayOf(p) : (p.values == null || p.values.length == 0 ? null : one(p, p.values[0]));
        entries.add(new AbstractMap.SimpleEntry<>(p.name, value));
      }
      // Kapua collects them with Collectors.toMap: a null key or value, or a duplicate name, fails the whole list.
      return entries.stream().collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue, (a, b) -> { throw new IllegalStateException("duplicate property"); }, LinkedHashMap::new));
    }

    static Object arrayOf(KuraXmlConfigPropertyAdapted p) {
      String[] v = p.values == null ? new String[0] : p.values;
      Object[] out;
      switch (p.type) {
        case longType: out = new Long[v.length]; break;
        case doubleType: out = new Double[v.length]; break;
        case floatType: out = new Float[v.length]; break;
        case integerType: out = new Integer[v.length]; break;
        case byteType: out = new Byte[v.length]; break;
        case charType: out = new Character[v.length]; break;
        case booleanType: out = new Boolean[v.length]; break;
        case shortType: out = new Short[v.length]; break;
        default: out = new String[v.length];
      }
      for (int i = 0; i < v.length; i++) out[i] = v[i] == null || (v[i].isEmpty() && p.type != ConfigPropertyType.stringType && p.type != ConfigPropertyType.passwordType) ? null : one(p, v[i]);
      return out;
    }

    static Object one(KuraXmlConfigPropertyAdapted p, String s) {
      switch (p.type) {
        case stringType: return s;
        case longType: return Long.parseLong(s);
        case doubleType: return Double.parseDouble(s);
        case floatType: return Float.parseFloat(s);
        case integerType: return Integer.parseInt(s);
        case byteType: return Byte.parseByte(s);
        case charType: return s.charAt(0);
        case booleanType: return Boolean.parseBoolean(s);
        case shortType: return Short.parseShort(s);
        case passwordType: return p.encrypted ? new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8) : s;
        default: throw new IllegalStateException();
      }
    }

    @Override
    public KuraXmlConfigPropertiesAdapted marshal(Map<String, Object> props) {
      throw new UnsupportedOperationException("the put request is made by hand below");
    }
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  @XmlType(propOrder = { "definition", "properties" })
  public static class KuraDeviceComponentConfiguration {
    @XmlAttribute(name = "pid") public String componentId;
    @XmlElement(name = "OCD", namespace = OCD) public Tocd definition;
    @XmlElement(name = "properties", namespace = ESF) @XmlJavaTypeAdapter(KuraXmlConfigPropertiesAdapter.class) public Map<String, Object> properties;
  }

  @XmlRootElement(name = "configurations", namespace = ESF)
  @XmlAccessorType(XmlAccessType.FIELD)
  public static class KuraDeviceConfiguration {
    @XmlElement(name = "configuration", namespace = ESF) public List<KuraDeviceComponentConfiguration> configurations;
  }

  @XmlRootElement(name = "snapshot-ids", namespace = ESF)
  @XmlAccessorType(XmlAccessType.FIELD)
  public static class KuraSnapshotIds {
    @XmlElement(name = "snapshotIds", namespace = ESF) public List<Long> snapshotIds;
  }

  /** What Kapua marshals for a Configuration Put: its properties as the adapter writes them. */
  @XmlRootElement(name = "configurations", namespace = ESF)
  @XmlAccessorType(XmlAccessType.FIELD)
  public static class PutConfigurations {
    @XmlElement(name = "configuration", namespace = ESF) public List<PutConfiguration> configurations = new ArrayList<>();
  }

  @XmlAccessorType(XmlAccessType.FIELD)
  public static class PutConfiguration {
    @XmlAttribute(name = "pid") public String componentId;
    @XmlElement(name = "properties", namespace = ESF) public KuraXmlConfigPropertiesAdapted properties;
  }

  // ---- the protocol -------------------------------------------------------------------------------

  static Unmarshaller strict(JAXBContext ctx) throws JAXBException {
    Unmarshaller u = ctx.createUnmarshaller();
    u.setEventHandler(event -> false); // Kapua's XmlUtil: every validation event is an error
    return u;
  }

  static String q(Object s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toString().toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static String valueJson(Object v) {
    if (v == null) throw new IllegalStateException("a property with a null value (Collectors.toMap fails)");
    if (v instanceof Object[]) {
      Object[] a = (Object[]) v;
      StringBuilder b = new StringBuilder("[");
      for (int i = 0; i < a.length; i++) b.append(i > 0 ? "," : "").append(a[i] == null ? "null" : q(a[i]));
      return b.append(']').toString();
    }
    return q(v);
  }

  static String conf(JAXBContext ctx, byte[] xml) throws Exception {
    KuraDeviceConfiguration c = (KuraDeviceConfiguration) strict(ctx).unmarshal(new ByteArrayInputStream(xml));
    StringBuilder b = new StringBuilder("{\"configurations\":[");
    List<KuraDeviceComponentConfiguration> list = c.configurations == null ? List.of() : c.configurations;
    for (int i = 0; i < list.size(); i++) {
      KuraDeviceComponentConfiguration k = list.get(i);
      if (k.componentId == null) throw new IllegalStateException("a configuration without pid");
      b.append(i > 0 ? "," : "").append("{\"pid\":").append(q(k.componentId)).append(",\"definition\":");
      if (k.definition == null) b.append("null");
      else {
        Tocd o = k.definition;
        b.append("{\"id\":").append(q(o.id)).append(",\"name\":").append(q(o.name)).append(",\"description\":").append(q(o.description)).append(",\"ad\":[");
        List<Tad> ads = o.ad == null ? List.of() : o.ad;
        for (int j = 0; j < ads.size(); j++) {
          Tad a = ads.get(j);
          // Kapua's translator: type.value() and the id of every AD.
          if (a.type == null) throw new IllegalStateException("AD " + a.id + " without a type");
          if (a.id == null) throw new IllegalStateException("an AD without an id");
          b.append(j > 0 ? "," : "").append("{\"id\":").append(q(a.id)).append(",\"name\":").append(q(a.name)).append(",\"type\":").append(q(a.type.value()))
              .append(",\"cardinality\":").append(a.cardinality).append(",\"required\":").append(a.required).append(",\"default\":").append(q(a.defaultValue))
              .append(",\"min\":").append(q(a.min)).append(",\"max\":").append(q(a.max)).append(",\"options\":[");
          List<Toption> ops = a.option == null ? List.of() : a.option;
          for (int n = 0; n < ops.size(); n++) b.append(n > 0 ? "," : "").append("[").append(q(ops.get(n).label)).append(",").append(q(ops.get(n).value)).append("]");
          b.append("]}");
        }
        b.append("]}");
      }
      b.append(",\"properties\":{");
      Map<String, Object> props = k.properties == null ? Map.of() : k.properties;
      int n = 0;
      for (Map.Entry<String, Object> e : props.entrySet()) {
        if (e.getKey() == null) throw new IllegalStateException("a property without a name");
        Object v = e.getValue();
        String cls = v == null ? "null" : v.getClass().getSimpleName();
        b.append(n++ > 0 ? "," : "").append(q(e.getKey())).append(":{\"class\":").append(q(cls)).append(",\"value\":").append(valueJson(v)).append("}");
      }
      b.append("}}");
    }
    return b.append("]}").toString();
  }

  static String snapshots(JAXBContext ctx, byte[] xml) throws Exception {
    KuraSnapshotIds s = (KuraSnapshotIds) strict(ctx).unmarshal(new ByteArrayInputStream(xml));
    // Kapua's translator iterates the list without a null check.
    if (s.snapshotIds == null) throw new IllegalStateException("no snapshotIds (null list)");
    return "{\"ids\":[" + s.snapshotIds.stream().map(l -> q(String.valueOf(l))).collect(Collectors.joining(",")) + "]}";
  }

  /** A Configuration Put body: a pid and its properties (name, ConfigPropertyType, array, values; texts base64 of UTF-8). */
  static String put(JAXBContext ctx, String spec) throws Exception {
    String[] parts = spec.split(" ", -1);
    PutConfigurations root = new PutConfigurations();
    PutConfiguration c = new PutConfiguration();
    c.componentId = new String(Base64.getDecoder().decode(parts[0]), StandardCharsets.UTF_8);
    List<KuraXmlConfigPropertyAdapted> props = new ArrayList<>();
    for (int i = 1; i < parts.length; i++) {
      String[] f = parts[i].split(",", -1);
      KuraXmlConfigPropertyAdapted p = new KuraXmlConfigPropertyAdapted();
      p.name = new String(Base64.getDecoder().decode(f[0]), StandardCharsets.UTF_8);
      p.type = ConfigPropertyType.valueOf(f[1]);
      p.array = f[2].equals("true");
      String[] values = new String[f.length - 3];
      for (int j = 3; j < f.length; j++) values[j - 3] = new String(Base64.getDecoder().decode(f[j]), StandardCharsets.UTF_8);
      // Kapua's adapter writes a password base64-encoded, with encrypted="true".
      if (p.type == ConfigPropertyType.passwordType) {
        p.encrypted = true;
        for (int j = 0; j < values.length; j++) values[j] = Base64.getEncoder().encodeToString(values[j].getBytes(StandardCharsets.UTF_8));
      }
      p.values = values;
      props.add(p);
    }
    c.properties = new KuraXmlConfigPropertiesAdapted();
    c.properties.properties = props.toArray(new KuraXmlConfigPropertyAdapted[0]);
    root.configurations.add(c);
    Marshaller m = ctx.createMarshaller();
    m.setProperty(Marshaller.JAXB_ENCODING, "UTF-8");
    // Kapua's marshaller writes the esf and ocd prefixes, both declared on the root (as Kura does).
    m.setProperty("com.sun.xml.bind.namespacePrefixMapper", new com.sun.xml.bind.marshaller.NamespacePrefixMapper() {
      @Override
      public String getPreferredPrefix(String uri, String suggestion, boolean requirePrefix) {
        return ESF.equals(uri) ? "esf" : OCD.equals(uri) ? "ocd" : suggestion;
      }

      @Override
      public String[] getPreDeclaredNamespaceUris() {
        return new String[] { ESF, OCD };
      }
    });
    StringWriter w = new StringWriter();
    m.marshal(root, w);
    return q(w.toString());
  }

  public static void main(String[] args) throws Exception {
    JAXBContext read = JAXBContext.newInstance(KuraDeviceConfiguration.class, KuraSnapshotIds.class);
    JAXBContext write = JAXBContext.newInstance(PutConfigurations.class);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      int sp = line.indexOf(' ');
      String cmd = sp < 0 ? line : line.substring(0, sp);
      String arg = sp < 0 ? "" : line.substring(sp + 1);
      try {
        String answer;
        if (cmd.equals("conf")) answer = conf(read, Base64.getDecoder().decode(arg));
        else if (cmd.equals("snapshots")) answer = snapshots(read, Base64.getDecoder().decode(arg));
        else if (cmd.equals("put")) answer = put(write, arg);
        else throw new IllegalArgumentException("unknown command " + cmd);
        out.println("ok " + answer);
      } catch (Throwable e) {
        Throwable c = e;
        StringBuilder msg = new StringBuilder();
        for (; c != null; c = c.getCause()) msg.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage()).append("; ");
        out.println("err " + Base64.getEncoder().encodeToString(msg.toString().getBytes(StandardCharsets.UTF_8)));
      }
    }
  }
}
